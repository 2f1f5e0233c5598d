#!/usr/bin/env bash
# Code comments say why, not what a benchmark measured on which commit: the numbers belong in
# docs/performance.md or in commit messages. Prints every comment in the library and tool
# sources that names a commit-like token (a word of 7 to 12 lowercase hex characters with at
# least one digit and at least one letter a-f) and fails if there is one. Hex constants such as
# 0xffffffffu are one word with an x and are not matched, nor are words without a digit
# ("defaced") or without a letter (numbers).
#   comment_hashes_test.sh SOURCE_ROOT
set -euo pipefail
root=${1:?source root}
cd "$root"
folders=(core kernels forward solvers capi io experiments cli include python training scripts
         cmake)
# The comment text of each line: after // or inside /* */ in C and C++, after # elsewhere.
scan() {
  awk -v style="$1" '
    function check(text,    count, words, k, w) {
      count = split(text, words, /[^A-Za-z0-9_]+/)
      for (k = 1; k <= count; ++k) {
        w = words[k]
        if (length(w) >= 7 && length(w) <= 12 && w ~ /^[0-9a-f]+$/ && w ~ /[0-9]/ &&
            w ~ /[a-f]/)
          printf "%s:%d: \"%s\" in a comment: %s\n", FILENAME, FNR, w, $0
      }
    }
    FNR == 1 { block = 0 }
    {
      line = $0
      if (style == "hash") {
        at = index(line, "#")
        if (at > 0) check(substr(line, at + 1))
        next
      }
      text = ""
      while (line != "") {
        if (block) {
          at = index(line, "*/")
          if (at == 0) { text = text " " line; line = "" }
          else { text = text " " substr(line, 1, at - 1); line = substr(line, at + 2); block = 0 }
        } else {
          slash = index(line, "//")
          open = index(line, "/*")
          if (slash > 0 && (open == 0 || slash < open)) {
            text = text " " substr(line, slash + 2)
            line = ""
          } else if (open > 0) {
            line = substr(line, open + 2)
            block = 1
          } else {
            line = ""
          }
        }
      }
      if (text != "") check(text)
    }' "${@:2}"
}
c_files=()
hash_files=()
while IFS= read -r file; do
  case "$file" in
    *.hpp|*.cpp|*.cu|*.cuh|*.h|*.cpp.in) c_files+=("$file") ;;
    *.py|*.sh|*.cmake|*.cmake.in|*CMakeLists.txt|*.ini) hash_files+=("$file") ;;
  esac
done < <({ find "${folders[@]}" -type f; echo CMakeLists.txt; } | sort)
found=$({ [ ${#c_files[@]} -eq 0 ] || scan c "${c_files[@]}"
          [ ${#hash_files[@]} -eq 0 ] || scan hash "${hash_files[@]}"; } || true)
if [ -n "$found" ]; then echo "$found"; fi
bad=$(if [ -n "$found" ]; then printf '%s\n' "$found" | wc -l; else echo 0; fi)
echo "$(( ${#c_files[@]} + ${#hash_files[@]} )) files checked, $bad comments naming a commit"
[ "$bad" -eq 0 ]
