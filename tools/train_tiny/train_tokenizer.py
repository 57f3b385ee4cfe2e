#!/usr/bin/env python3
"""Train the ninfer-tiny byte-level BPE tokenizer (HF tokenizers) on the training split of the corpus.

Same pipeline as the Qwen3.5 tokenizer (shared/docs/qwen35.md §6.1): NFC normalizer, Split(Qwen3.5 regex,
isolated) + ByteLevel(add_prefix_space=False, use_regex=False) pre-tokenizer, ByteLevel post-processor and decoder,
BPE without unk / byte fallback. The 33 Qwen3.5 added tokens are appended after the learned vocabulary in Qwen's
order with Qwen's special flags (`<tool_call>`, `<think>`, ... are added but not "special"), so the total vocabulary
is --vocab-size (default 8192) and `<|endoftext|>` is the first added id.

Writes tokenizer.json, tokenizer_config.json and chat_template.jinja (copied from the corpus dir) into --out.
"""
import argparse
import json
import os
import shutil
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# One definition of the Qwen3.5 split regex and added tokens (content, special), in Qwen3.5's order.
sys.path.insert(0, os.path.join(REPO, "tools", "tokenizer"))
from make_tokenizer_json import ADDED, QWEN35_PATTERN as QWEN_SPLIT  # noqa: E402


def iter_texts(path, limit_chars):
    seen = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"]
            # Special-token strings are added tokens: keep them out of the BPE statistics.
            for tok, _ in ADDED:
                text = text.replace(tok, "\n")
            yield text
            seen += len(text)
            if seen >= limit_chars:
                return


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(REPO, "build-tiny", "work", "corpus"))
    ap.add_argument("--out", default=os.path.join(REPO, "build-tiny", "work", "tokenizer"))
    ap.add_argument("--vocab-size", type=int, default=8192)
    ap.add_argument("--max-chars", type=int, default=12_000_000)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False, ignore_merges=True))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)

    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab_size - len(ADDED),
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(iter_texts(os.path.join(args.corpus, "train.jsonl"), args.max_chars), trainer=trainer)
    base = tok.get_vocab_size()
    if base != args.vocab_size - len(ADDED):
        raise SystemExit(f"BPE learned {base} tokens, expected {args.vocab_size - len(ADDED)} (corpus too small?)")
    for content, special in ADDED:
        t = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        if special:
            tok.add_special_tokens([t])
        else:
            tok.add_tokens([t])
    ids = {c: tok.token_to_id(c) for c, _ in ADDED}
    assert ids["<|endoftext|>"] == base and tok.get_vocab_size() == args.vocab_size, ids

    path = os.path.join(args.out, "tokenizer.json")
    tok.save(path)
    # Round trip through the file, and a sanity check of the added tokens and byte-level decoding.
    t2 = Tokenizer.from_file(path)
    sample = "<|im_start|>user\nhi<|im_end|>\n<think>\n\n</think>\n\ndef f(x):\n    return x  # é 中\n"
    enc = t2.encode(sample)
    assert t2.decode(enc.ids, skip_special_tokens=False) == sample, t2.decode(enc.ids, skip_special_tokens=False)
    assert ids["<think>"] in enc.ids and ids["<|im_start|>"] == enc.ids[0]

    tok_cfg = {
        "tokenizer_class": "TokenizersBackend",
        "model_max_length": 4096,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
    }
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2)
        f.write("\n")
    shutil.copyfile(os.path.join(args.corpus, "chat_template.jinja"), os.path.join(args.out, "chat_template.jinja"))
    print(json.dumps({"vocab_size": tok.get_vocab_size(), "bpe": base, "added": ids}, indent=1))


if __name__ == "__main__":
    main()
