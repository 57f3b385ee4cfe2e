#!/usr/bin/env python3
"""Encode throughput: ninfer's tokenizer vs HF `tokenizers`, single-threaded, same corpus, one run.

The corpus is tools/tokenizer/corpus.py's strings (code, many scripts, emoji, whitespace runs, digits), packed
into documents of ~4 KB so that Python call overhead does not dominate the HF numbers; the tokenizer is the
Qwen3.5 tokenizer.json from tests/data/tokenizer/qwen35_tokenizer.tar.xz. Both sides do one warm-up pass and
report the best of --repeats passes; the id checksums must agree.

Run (after building the bench target):
    cmake --preset linux-cpu && cmake --build build --target tokenizer_bench
    scripts/tools-env.sh python bench/tokenizer/bench_encode.py --bench build/bench/tokenizer/tokenizer_bench
    scripts/tools-env.sh python bench/tokenizer/bench_encode.py --bench build/bench/tokenizer/tokenizer_bench --ascii-only
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenizer"))
import corpus  # noqa: E402


def checksum(all_ids):
    s = 0
    for ids in all_ids:
        for i in ids:
            s = (s * 31 + i) & 0xFFFFFFFFFFFFFFFF
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path of the tokenizer_bench binary")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--copies", type=int, default=4, help="corpus copies (each with a different seed)")
    ap.add_argument("--ascii-only", action="store_true",
                    help="keep only the ASCII strings of the corpus (source code and English prose)")
    args = ap.parse_args()

    from tokenizers import Tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(ROOT, "tests", "data", "tokenizer", "qwen35_tokenizer.tar.xz")) as tar:
            tar.extract("tokenizer.json", tmp)
        tj = os.path.join(tmp, "tokenizer.json")
        strings = []
        for seed in range(args.copies):
            strings += corpus.make_corpus(6000, seed=1234 + seed)
        if args.ascii_only:
            strings = [s for s in strings if s.isascii()] * 3
        docs, cur = [], []
        size = 0
        for s in strings:
            cur.append(s)
            size += len(s.encode("utf-8"))
            if size >= 4096:
                docs.append("\n".join(cur))
                cur, size = [], 0
        if cur:
            docs.append("\n".join(cur))
        cpath = os.path.join(tmp, "corpus.jsonl")
        with open(cpath, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"t": d}, ensure_ascii=False) + "\n")
        nbytes = sum(len(d.encode("utf-8")) for d in docs)

        # HF tokenizers, the same tokenizer.json with added tokens treated as text (ninfer's encode())
        doc = json.load(open(tj, encoding="utf-8"))
        doc["added_tokens"] = []
        hf = Tokenizer.from_str(json.dumps(doc, ensure_ascii=False))
        ids = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]  # warm-up
        hf_sum = checksum(ids)
        best_loop = best_batch = 1e30
        for _ in range(args.repeats):
            t = time.perf_counter()
            for d in docs:
                hf.encode(d, add_special_tokens=False)
            best_loop = min(best_loop, time.perf_counter() - t)
            t = time.perf_counter()
            hf.encode_batch(docs, add_special_tokens=False)
            best_batch = min(best_batch, time.perf_counter() - t)

        ids_path = os.path.join(tmp, "ids.jsonl")
        out = subprocess.run([args.bench, tj, cpath, str(args.repeats), ids_path], check=True, capture_output=True,
                             text=True)
        ours = json.loads(out.stdout.strip().splitlines()[-1])
        ntok = sum(len(i) for i in ids)
        kind = "ASCII code and prose" if args.ascii_only else "mixed scripts, code, emoji, whitespace"
        print(f"corpus ({kind}): {len(docs)} docs, {nbytes / 1e6:.2f} MB, {ntok} tokens")
        print(f"HF tokenizers {hf_version()} encode() loop, 1 thread : {best_loop:.3f} s  {nbytes / best_loop / 1e6:7.2f} MB/s")
        print(f"HF tokenizers encode_batch, RAYON_NUM_THREADS=1    : {best_batch:.3f} s  {nbytes / best_batch / 1e6:7.2f} MB/s")
        print(f"ninfer Tokenizer::encode, 1 thread (warm)         : {ours['best_s']:.3f} s  {ours['mb_per_s']:7.2f} MB/s"
              f"  (cold pass {ours['cold_s']:.3f} s, load {ours['load_s']:.2f} s)")
        print(f"ratio ninfer / HF encode loop : {best_loop / ours['best_s']:.2f}x")
        print(f"ratio ninfer / HF encode_batch: {best_batch / ours['best_s']:.2f}x")
        same = ours["tokens"] == ntok and ours["checksum"] == hf_sum
        print(f"same ids: {'yes' if same else 'NO'} (tokens {ours['tokens']} vs {ntok})")
        if not same:
            with open(ids_path) as f:
                for k, (d, line) in enumerate(zip(docs, f)):
                    if json.loads(line) != ids[k]:
                        print(f"first differing document #{k}: {d[:200]!r}")
                        break
            sys.exit(1)


def hf_version():
    import tokenizers
    return tokenizers.__version__


if __name__ == "__main__":
    main()
