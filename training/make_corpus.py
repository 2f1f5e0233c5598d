#!/usr/bin/env python3
"""The training study's text corpus: the English manual pages a Debian system installs,
rendered to plain ASCII text, split into a training and a held-out part by whole pages.

    python3 training/make_corpus.py                      # data/corpus/, about 16 MB
    python3 training/make_corpus.py --out DIR --megabytes 0.2     # a small sample (CI)

Pages: every file under /usr/share/man/man<section>/ (the English pages; the language
subdirectories such as de/ or fr/ are not read), symbolic links, .so redirections and the paths
matching --exclude left out: by default the 16 631 generated gcloud(1) pages of Google's google-
cloud-cli package, 84 % of the pages on the machine the corpus was made on, near-identical
templates that would make the text easy. Order: by the SHA-256 of the page's path relative to
--man (deterministic, independent of the file system, and a mix of sections and packages rather
than the alphabet's first commands). Pages are taken in that order until the text reaches
--megabytes; every --held-out-th page (the 20th, 40th, ...; the last one if there are fewer)
goes to eval.txt, the others to train.txt, so no held-out text is ever trained on. A page's text
is at most --page-kilobytes long (cut at a line end): a few huge pages (cmake-modules(7),
bash(1)) would otherwise dominate.

Rendering: `groff -k -t -man -Tascii -P-cbuo -rHY=0` (preconv for the source's encoding, tbl for
tables, ASCII output without bold/underline overstrikes or colour escapes, no hyphenation); then
the running header and footer lines are dropped, the justification's runs of spaces inside a
line become one space, trailing spaces go and runs of blank lines become one. The text is ASCII,
so the study's byte-level vocabulary (256 tokens) is one token per character. Pages that groff
fails on, or that render to nothing, are left out (listed as skipped in MANIFEST.tsv).

Without manual pages (no --man directory or no page in it) the script cuts
/usr/share/common-licenses/GPL-3 into 2 KB "pages" instead and says so; a study on that text
measures nothing beyond character statistics (docs/experiments.md).

Writes DIR/train.txt, DIR/eval.txt and DIR/MANIFEST.tsv (one line per page: split, bytes,
path) and prints the sizes and SHA-256 of the two texts. Needs groff (Debian: groff-base).
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import os
import re
import subprocess
import sys

MAN = "/usr/share/man"
FALLBACK = "/usr/share/common-licenses/GPL-3"
GROFF = ["groff", "-k", "-t", "-man", "-Tascii", "-P-cbuo", "-rHY=0"]
EXCLUDE = r"man1/gcloud"


def pages(man, exclude):
    """The English pages' paths relative to man, in SHA-256 order."""
    found = []
    if os.path.isdir(man):
        for section in sorted(os.listdir(man)):
            folder = os.path.join(man, section)
            if not re.fullmatch(r"man[0-9a-z]+", section) or not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if (os.path.isfile(path) and not os.path.islink(path)
                        and not (exclude and re.match(exclude, os.path.relpath(path, man)))):
                    found.append(os.path.relpath(path, man))
    return sorted(found, key=lambda p: hashlib.sha256(p.encode()).hexdigest())


def tidy(text, limit):
    """Plain text of one rendered page: see the module's docstring."""
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[1:-1]  # the running header ("LS(1) ... LS(1)") and footer
    out, blank = [], True
    for line in lines:
        line = re.sub(r"(?<=\S) {2,}", " ", line.rstrip())
        if not line:
            if not blank:
                out.append("")
            blank = True
            continue
        out.append(line)
        blank = False
    body = "\n".join(out).strip("\n") + "\n"
    if len(body) > limit:
        body = body[:body.rfind("\n", 0, limit) + 1]
    return body


def render(man, page, limit):
    """(page, text) with text None when the page is a redirection or groff fails on it."""
    path = os.path.join(man, page)
    opener = gzip.open if page.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            source = f.read()
    except OSError:
        return page, None
    if source.lstrip().startswith(b".so "):  # an alias page (".so man1/other.1")
        return page, None
    try:
        done = subprocess.run(GROFF, input=source, capture_output=True, timeout=60,
                              env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.SubprocessError):
        return page, None
    text = done.stdout.decode("ascii", "replace").replace("\ufffd", "?")
    if done.returncode != 0 or not text.strip():
        return page, None
    body = tidy(text, limit)
    return page, body if len(body) > 1 else None


def from_fallback(limit):
    with open(FALLBACK, encoding="utf-8") as f:
        text = f.read()
    chunks, start = [], 0
    while start < len(text):
        end = text.find("\n", start + 2048)
        end = len(text) if end < 0 else end + 1
        chunks.append((f"GPL-3@{start}", text[start:end][:limit]))
        start = end
    return chunks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "corpus"),
        help="output directory (default: data/corpus of the repository; git ignores it)")
    parser.add_argument("--man", default=MAN, help=f"the manual's root (default {MAN})")
    parser.add_argument("--exclude", default=EXCLUDE,
                        help=f"leave out the pages whose path (e.g. man1/ls.1.gz) starts with "
                             f"this regular expression ('' for none; default {EXCLUDE})")
    parser.add_argument("--megabytes", type=float, default=16.0,
                        help="stop once train + eval hold this many MB (10^6 bytes; default 16)")
    parser.add_argument("--held-out", type=int, default=20,
                        help="every this-many-th page goes to eval.txt (default 20)")
    parser.add_argument("--page-kilobytes", type=int, default=64,
                        help="a page's text is cut to at most this many KB (default 64)")
    parser.add_argument("--jobs", type=int, default=2, help="groff processes at once (default 2)")
    args = parser.parse_args(argv)
    target, limit = int(args.megabytes * 1e6), args.page_kilobytes * 1000
    os.makedirs(args.out, exist_ok=True)
    listed = pages(args.man, args.exclude)
    taken, skipped, size = [], [], 0
    if listed:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            # Rendered in blocks, kept in the listed order, so the cut is deterministic.
            for first in range(0, len(listed), 64):
                block = listed[first:first + 64]
                for page, text in pool.map(lambda p: render(args.man, p, limit), block):
                    if size >= target:
                        break
                    if text is None:
                        skipped.append(page)
                        continue
                    taken.append((page, text))
                    size += len(text)
                if size >= target:
                    break
    else:
        print(f"make_corpus.py: no manual pages under {args.man}; cutting {FALLBACK} instead",
              file=sys.stderr)
        taken = from_fallback(limit)
    parts = {"train": [], "eval": []}
    manifest = []
    for k, (page, text) in enumerate(taken, 1):
        # The last page is held out when no k-th one was (a sample of fewer than k pages).
        last = k == len(taken) > 1 and not parts["eval"]
        split = "eval" if k % args.held_out == 0 or last else "train"
        parts[split].append(text)
        manifest.append(f"{split}\t{len(text)}\t{page}")
    manifest += [f"skipped\t0\t{page}" for page in skipped]
    for split, texts in parts.items():
        data = "\n".join(texts).encode("ascii")
        with open(os.path.join(args.out, f"{split}.txt"), "wb") as f:
            f.write(data)
        print(f"{split}.txt: {len(texts)} pages, {len(data)} bytes, sha256 "
              f"{hashlib.sha256(data).hexdigest()}")
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w") as f:
        f.write("split\tbytes\tpage\n" + "\n".join(manifest) + "\n")
    print(f"make_corpus.py: {args.out}: {len(taken)} pages ({len(skipped)} skipped) of "
          f"{len(listed)} listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
