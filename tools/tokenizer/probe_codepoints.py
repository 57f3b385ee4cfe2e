#!/usr/bin/env python3
"""Exhaustive check of ninfer's tokenizer against HF `tokenizers` over every Unicode scalar value.

For each code point c (U+0000..U+10FFFF, no surrogates) it encodes a probe string that puts c next to letters,
digits, spaces, punctuation, combining marks (U+0300, U+0301), a contraction and a newline, with both
implementations, and reports the code points whose ids differ. This is how the HF-compatibility overrides in
engine/tokenizer/unicode_tables.cpp were validated (0 mismatches). Takes a few minutes; not part of ctest.

Run (after building the bench target, which encodes a JSONL file and can dump ids):
    scripts/tools-env.sh python tools/tokenizer/probe_codepoints.py --bench build/bench/tokenizer/tokenizer_bench
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def probe(c):
    return "x" + c + "x " + c + "1 " + c + c + "! " + c + "\u0301 \u0301" + c + " 'x" + c + "\n" + c + " e" + c + "\u0300"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--chunk", type=int, default=0x40000)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"
    from tokenizers import Tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(ROOT, "tests", "data", "tokenizer", "qwen35_tokenizer.tar.xz")) as tar:
            tar.extract("tokenizer.json", tmp)
        tj = os.path.join(tmp, "tokenizer.json")
        doc = json.load(open(tj, encoding="utf-8"))
        doc["added_tokens"] = []
        hf = Tokenizer.from_str(json.dumps(doc, ensure_ascii=False))
        bad, total = [], 0
        for lo in range(0, 0x110000, args.chunk):
            cps = [cp for cp in range(lo, min(lo + args.chunk, 0x110000)) if not 0xD800 <= cp <= 0xDFFF]
            texts = [probe(chr(cp)) for cp in cps]
            cpath, ipath = os.path.join(tmp, "p.jsonl"), os.path.join(tmp, "ids.jsonl")
            with open(cpath, "w", encoding="utf-8") as f:
                for t in texts:
                    f.write(json.dumps({"t": t}, ensure_ascii=False) + "\n")
            subprocess.run([args.bench, tj, cpath, "0", ipath], check=True, capture_output=True)
            with open(ipath) as f:
                ours = [json.loads(line) for line in f]
            theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
            bad += [cp for cp, a, b in zip(cps, ours, theirs) if a != b]
            total += len(cps)
            print(f"U+{lo:06X}..: {len(cps)} code points, {len(bad)} mismatches so far", flush=True)
        print(f"{total} code points, {len(bad)} mismatches" + (": " + " ".join(f"U+{cp:04X}" for cp in bad[:50]) if bad else ""))
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
