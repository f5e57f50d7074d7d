#!/usr/bin/python3
"""Writes the byte-level text corpus of murmur's language-model case study
(docs/experiments.md, "A byte-level language model") and prints what a model
has to beat.

The corpus is the Python standard library's source: the top-level .py files
of /usr/bin/python3's stdlib directory (Debian 12: /usr/lib/python3.11, from
the package libpython3.11-stdlib, which python3 depends on), in sorted order,
concatenated, cut to --max-bytes. It is Debian's interpreter's library
whichever python3 runs this script (a venv's or pyenv's would give another
corpus), unless --stdlib names another directory:

    python3 examples/lm/make_corpus.py corpus.txt
    murmur sim --dataset text:128:corpus.txt --model torchscript:lm.pt ...

It prints the corpus' size and its unigram entropy: the loss (nats per byte)
and perplexity of the best model that ignores context. A language model that
learns anything from its context ends below that perplexity; one that has
learned nothing starts near 256, the perplexity of a uniform guess.
"""
import argparse
import collections
import glob
import math
import os
import subprocess
import sys
import sysconfig

DEBIAN_PYTHON = "/usr/bin/python3"


def debian_stdlib():
    """The stdlib directory of /usr/bin/python3, or this interpreter's without one."""
    if not os.path.exists(DEBIAN_PYTHON):
        print(f"note: no {DEBIAN_PYTHON}; using {sys.executable}'s standard library", file=sys.stderr)
        return sysconfig.get_paths()["stdlib"]
    query = "import sysconfig; print(sysconfig.get_paths()['stdlib'])"
    return subprocess.run([DEBIAN_PYTHON, "-c", query], check=True, capture_output=True,
                          text=True).stdout.strip()


def corpus_bytes(stdlib, max_bytes):
    out = bytearray()
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py"))):
        with open(path, "rb") as f:
            out += f.read()
        if len(out) >= max_bytes:
            break
    return bytes(out[:max_bytes])


def unigram_loss(data):
    counts = collections.Counter(data)
    n = len(data)
    return -sum(c / n * math.log(c / n) for c in counts.values())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="corpus.txt")
    parser.add_argument("--max-bytes", type=int, default=4_000_000)
    parser.add_argument("--stdlib", help="the directory whose top-level .py files make the corpus "
                        "(default: /usr/bin/python3's standard library)")
    args = parser.parse_args()
    stdlib = args.stdlib or debian_stdlib()
    data = corpus_bytes(stdlib, args.max_bytes)
    if not data:
        sys.exit(f"make_corpus.py: no .py files in {stdlib}")
    with open(args.out, "wb") as f:
        f.write(data)
    loss = unigram_loss(data)
    print(f"wrote {args.out}: {len(data)} bytes of {stdlib}; unigram loss {loss:.4f} nats per byte, "
          f"perplexity {math.exp(loss):.2f}")
