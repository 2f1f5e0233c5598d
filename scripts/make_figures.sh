#!/bin/sh
# Rebuilds the figures of docs/results/ from the bundled headline study with the current code:
# runs experiments/headline.ini on the CPU into a scratch log, draws it with experiments/plot.py
# stamped with the commit, and replaces every docs/results/headline_*.png that docs/results.md
# shows. Commit the code first: the stamp names HEAD (with "+changes" when the tracked files
# differ from it). Prints the run time and the table docs/results.md quotes.
#   scripts/make_figures.sh [BUILD_DIR]      (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
sinkgrad=$build/bin/sinkgrad
[ -x "$sinkgrad" ] || { echo "make_figures.sh: no $sinkgrad; build first (scripts/main.sh)"; exit 1; }

commit=$(git -C "$root" rev-parse --short HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  commit="$commit+changes"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
"$sinkgrad" run "$root/experiments/headline.ini" --output "$work/headline.h5" --device cpu
echo "make_figures.sh: headline.ini took $(($(date +%s) - start)) s"
python3 "$root/experiments/plot.py" "$work/headline.h5" --out-dir "$work/plots" \
  --stamp "sinkgrad commit $commit, experiments/headline.ini" > "$work/written.txt"

# The figures docs/results.md shows, each replaced by today's; a figure it names that plot.py
# no longer draws is an error.
figures=$(grep -o 'results/headline_[A-Za-z0-9_.]*\.png' "$root/docs/results.md" | sort -u)
for figure in $figures; do
  name=$(basename "$figure")
  [ -s "$work/plots/$name" ] || { echo "make_figures.sh: plot.py drew no $name"; exit 1; }
  cp "$work/plots/$name" "$root/docs/results/$name"
  echo "docs/results/$name"
done
"$sinkgrad" summary "$work/headline.h5" --where T=20 --where n=4
