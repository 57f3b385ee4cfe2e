#!/usr/bin/env python3
"""Write bench/accuracy/data/heldout.jsonl: the accuracy benchmark's fixed held-out text.

The text is the first documents of ninfer-tiny's held-out split (tools/train_tiny/build_corpus.py, seed 1234,
held-out = 4 % of the source files by sha1 of their path: no file of it was trained on), in the split's own
(seeded, shuffled) order, up to --max-chars characters of document text. Each line is the corpus record as it is
({"kind", "source", "text"}); the benchmark tokenizes every document as train.py does (HF encode, no special tokens
added, the document's own control tokens recognised) and appends <|endoftext|> after it.

  scripts/tools-env.sh python tools/train_tiny/build_corpus.py --out /tmp/corpus     # ~10 s, deterministic
  scripts/tools-env.sh python tools/accuracy/make_heldout_text.py --corpus /tmp/corpus
"""
import argparse
import hashlib
import json
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="build_corpus.py --out directory (holds heldout.jsonl)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "accuracy", "data", "heldout.jsonl"))
    ap.add_argument("--max-chars", type=int, default=140_000)
    args = ap.parse_args()

    with open(os.path.join(args.corpus, "heldout.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    with open(os.path.join(args.corpus, "train.jsonl"), encoding="utf-8") as f:
        train_sources = {json.loads(line)["source"] for line in f}
    kept, chars = [], 0
    for d in docs:
        if chars + len(d["text"]) > args.max_chars:
            break
        if d["source"] in train_sources:
            raise SystemExit(f"held-out document from {d['source']} shares its file with the training split")
        kept.append(d)
        chars += len(d["text"])
    with open(args.out, "w", encoding="utf-8") as f:
        for d in kept:
            f.write(json.dumps({"kind": d["kind"], "source": d["source"], "text": d["text"]}, ensure_ascii=False) + "\n")
    with open(args.out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    print(f"{args.out}: {len(kept)} documents, {chars} characters, {len({d['source'] for d in kept})} files, "
          f"sha256 {digest}")


if __name__ == "__main__":
    main()
