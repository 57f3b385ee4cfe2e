#!/usr/bin/env python3
"""Golden draft vocabulary for ninfer-pack --draft-vocab (tests/artifact/pack_repack_test.cpp), from HF `tokenizers`.

Reads the tokenizer.json blob, config and chat template of models/ninfer-tiny.ninfer, tokenizes the corpus files in
tests/data/quant/draft_vocab/ (sorted by name; plain encode without special tokens), counts ids and applies the
documented rule (docs/pack.md): every added token whose content occurs in the chat template and every eos id, then the
most frequent ids (ties: lower id) up to N; ids ascending. Writes tests/data/quant/draft_vocab/golden_N<N>.i32 and
golden.json (N, forced ids, corpus token count, covered count).

Run: scripts/tools-env.sh python tools/quant/make_draft_vocab_golden.py   (from the repo root)
"""
import json
import pathlib
import struct
import sys

import numpy as np
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACT = ROOT / "models" / "ninfer-tiny.ninfer"
DIR = ROOT / "tests" / "data" / "quant" / "draft_vocab"
N = 300


def read_artifact(path):
    b = path.read_bytes()
    assert b[:8] == b"NINFER\x1a\n"
    meta_off, meta_bytes, data_off = struct.unpack_from("<QQQ", b, 16)
    meta = json.loads(b[meta_off:meta_off + meta_bytes])
    blob = next(x for x in meta["blobs"] if x["name"] == "tokenizer.json")
    return meta, b[data_off + blob["offset"]:data_off + blob["offset"] + blob["bytes"]].decode("utf-8")


def ids_of(j):
    if isinstance(j, int):
        return [j]
    if isinstance(j, list):
        return [i for v in j for i in ids_of(v)]
    return []


def main():
    meta, tok_json = read_artifact(ARTIFACT)
    tok = Tokenizer.from_str(tok_json)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    counts = np.zeros(vocab, dtype=np.int64)
    total = 0
    for f in sorted(p for p in DIR.iterdir() if p.suffix in (".py", ".h")):
        ids = tok.encode(f.read_text(encoding="utf-8"), add_special_tokens=False).ids
        total += len(ids)
        np.add.at(counts, ids, 1)
    template = meta.get("chat_template") or ""
    added = json.loads(tok_json)["added_tokens"]
    forced = {a["id"] for a in added if a["content"] and a["content"] in template}
    for where in ("config", "generation"):
        forced |= set(ids_of(meta.get(where, {}).get("eos_token_id")))
    order = sorted(range(vocab), key=lambda i: (-counts[i], i))
    chosen = set(forced)
    for i in order:
        if len(chosen) == N:
            break
        chosen.add(i)
    ids = np.array(sorted(chosen), dtype="<i4")
    ids.tofile(DIR / f"golden_N{N}.i32")
    (DIR / "golden.json").write_text(json.dumps({
        "generator": "tools/quant/make_draft_vocab_golden.py", "artifact": "models/ninfer-tiny.ninfer", "n": N,
        "forced": sorted(forced), "corpus_tokens": int(total), "covered_tokens": int(counts[ids].sum()),
        "distinct_corpus_ids": int((counts > 0).sum())}, indent=1) + "\n")
    print(f"N={N} forced={len(forced)} corpus_tokens={total} distinct={(counts > 0).sum()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
