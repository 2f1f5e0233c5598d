"""training/make_corpus.py on a small manual tree written here (a few troff pages, an alias
page, an excluded page, a language subdirectory): the pages rendered to ASCII without their
running header and footer, every k-th page (in the script's SHA-256 order) held out whole, the
alias, the excluded page and the other language left out, the same bytes on a second run; and
the GPL-3 fallback where no page is found.

    training_corpus_test.py MAKE_CORPUS_SCRIPT WORK_DIR
"""
import gzip
import hashlib
import os
import shutil
import subprocess
import sys

PAGE = """.TH {name} 1 2026-01-01 test "Test Manual"
.SH NAME
{name} \\- a page for the corpus test
.SH DESCRIPTION
The {name} command reads {name} files and writes them, quite unremarkably.
.TP
.B \\-x
exclude the {name} option.
"""


def require(condition, message):
    if not condition:
        print(f"FAILED: {message}")
        sys.exit(1)


def write(path, text, compress=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with (gzip.open(path, "wt") if compress else open(path, "w")) as f:
        f.write(text)


def make(script, man, out, *extra):
    done = subprocess.run([sys.executable, script, "--man", man, "--out", out, "--jobs", "1",
                           *extra], capture_output=True, text=True)
    require(done.returncode == 0, f"make_corpus.py failed: {done.stderr}")
    return done


def main(script, work):
    if shutil.which("groff") is None:
        print("training_corpus_test: skipped: no groff (Debian: groff-base)")
        return
    shutil.rmtree(work, ignore_errors=True)
    man = os.path.join(work, "man")
    names = [f"page{k}" for k in range(9)]
    for k, name in enumerate(names):
        write(os.path.join(man, f"man{1 + k % 2}", f"{name}.{1 + k % 2}.gz"),
              PAGE.format(name=name), compress=True)
    write(os.path.join(man, "man1", "alias.1"), ".so man1/page0.1\n")
    write(os.path.join(man, "man1", "gcloud_thing.1"), PAGE.format(name="gcloudpage"))
    write(os.path.join(man, "de", "man1", "deutsch.1"), PAGE.format(name="deutschpage"))
    out = os.path.join(work, "corpus")
    make(script, man, out, "--held-out", "3")
    with open(os.path.join(out, "train.txt"), "rb") as f:
        train = f.read()
    with open(os.path.join(out, "eval.txt"), "rb") as f:
        held = f.read()
    require(all(b < 128 for b in train + held), "the corpus is not ASCII")
    with open(os.path.join(out, "MANIFEST.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    taken = [r for r in rows if r[0] in ("train", "eval")]
    order = sorted((os.path.relpath(os.path.join(d, n), man) for d, _, files in os.walk(man)
                    for n in files if "/de/" not in os.path.join(d, n) + "/"
                    and not n.startswith("gcloud")),
                   key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    require([r[2] for r in rows] == [p for p in order if "alias" not in p] + ["man1/alias.1"],
            f"MANIFEST order or content: {rows}")
    require([r[0] for r in taken] == ["eval" if k % 3 == 0 else "train"
                                      for k in range(1, len(taken) + 1)],
            f"every 3rd page is not held out: {[r[0] for r in taken]}")
    for page in taken:
        name = os.path.basename(page[2]).split(".")[0]
        text = held if page[0] == "eval" else train
        require(f"The {name} command reads".encode() in text, f"{name} not in {page[0]}.txt")
        other = train if page[0] == "eval" else held
        require(f"The {name} command".encode() not in other, f"{name} in both parts")
    for absent in (b"gcloudpage", b"deutschpage", b"Test Manual", b"2026-01-01"):
        require(absent not in train + held, f"{absent!r} is in the corpus")
    again = os.path.join(work, "again")
    make(script, man, again, "--held-out", "3")
    for name in ("train.txt", "eval.txt", "MANIFEST.tsv"):
        with open(os.path.join(out, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
            require(a.read() == b.read(), f"{name} differs between two runs")
    print(f"training_corpus_test: {len(taken)} pages, {len(train)} + {len(held)} bytes: ok")

    if os.path.isfile("/usr/share/common-licenses/GPL-3"):
        fallback = os.path.join(work, "fallback")
        done = make(script, os.path.join(work, "no-man"), fallback)
        require("GPL-3" in done.stderr and os.path.getsize(os.path.join(fallback, "eval.txt")),
                f"the GPL-3 fallback: {done.stderr}")
        print("training_corpus_test: without pages, the GPL-3 fallback: ok")


if __name__ == "__main__":
    main(*sys.argv[1:3])
