#!/usr/bin/env python3
"""Builds the tiny end-to-end serving fixture (tests/data/serve/): a random Qwen3.5 hybrid with a real byte-level
BPE tokenizer and the official Qwen3.5 chat template, plus what transformers generates from it for a few chat
requests, so the C++ server test compares the HTTP answer with an independent implementation.

The tokenizer is trained with HF `tokenizers` (byte-level BPE, vocab 512) on the committed Qwen3.5 template text, with the Qwen3.5
pre-tokenizer (Split regex + ByteLevel), NFC, and the Qwen special tokens. The model is a transformers
Qwen3_5ForCausalLM with random weights (seeded), vocab 512. Golden: for each conversation, the prompt ids from
apply_chat_template + the tokenizer, and 24 greedy tokens from model.generate (no eos stop), decoded.

Run (deterministic):
    scripts/tools-env.sh python tools/serve_fixture/make_serving_fixture.py --out tests/data/serve
"""
import argparse
import json
import os
import shutil
import sys

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers, Regex
from transformers import PreTrainedTokenizerFast, Qwen3_5ForCausalLM, Qwen3_5TextConfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenizer"))
from make_tokenizer_json import QWEN35_PATTERN  # noqa: E402  (one definition of the Qwen3.5 split regex)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PLAIN_ADDED = ["<tool_call>", "</tool_call>", "<think>", "</think>"]
VOCAB = 512

CONVERSATIONS = [
    [{"role": "user", "content": "Write a function that adds two numbers."}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "def fib(n):"}],
]


def build_tokenizer():
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(SPECIAL) - len(PLAIN_ADDED), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    # A fixed corpus (the committed chat template and the conversations), so editing this script does not
    # change the fixture.
    template = open(os.path.join(ROOT, "tools/tokenizer/templates/qwen35.jinja"), encoding="utf-8").read()
    corpus = (template.splitlines() + [m["content"] for conv in CONVERSATIONS for m in conv]) * 3
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_special_tokens(SPECIAL)
    tok.add_tokens(PLAIN_ADDED)
    # The Python ByteLevel decoder ignores its keyword arguments; write the Qwen decoder settings explicitly.
    j = json.loads(tok.to_str())
    j["decoder"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return Tokenizer.from_str(json.dumps(j))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/data/serve"))
    args = ap.parse_args()
    torch.manual_seed(4321)
    torch.set_num_threads(1)
    model_dir = os.path.join(args.out, "model")
    os.makedirs(model_dir, exist_ok=True)

    raw = build_tokenizer()
    assert raw.get_vocab_size() <= VOCAB, raw.get_vocab_size()
    template = open(os.path.join(ROOT, "tools/tokenizer/templates/qwen35.jinja"), encoding="utf-8").read()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf_tok.chat_template = template
    hf_tok.save_pretrained(model_dir)
    # tokenizer.json as transformers writes it (with its no-op TemplateProcessing post-processor): what users have.
    with open(os.path.join(model_dir, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(template)

    config = Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
        layer_types=["linear_attention", "linear_attention", "full_attention"], tie_word_embeddings=False,
        max_position_embeddings=1024, rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                                                       "partial_rotary_factor": 0.25},
        eos_token_id=[raw.token_to_id("<|im_end|>"), raw.token_to_id("<|endoftext|>")],
        pad_token_id=raw.token_to_id("<|endoftext|>"), bos_token_id=None)
    config._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 1.0 if "embed" in name else (4.0 if "lm_head" in name else 1.0) * p.shape[1] ** -0.5)
            elif "norm" in name:
                p.normal_(0.0, 0.2)
    model.save_pretrained(model_dir, safe_serialization=True)
    model.generation_config.do_sample = False
    model.generation_config.save_pretrained(model_dir)

    golden = []
    for conv in CONVERSATIONS:
        prompt = hf_tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        ids = hf_tok.apply_chat_template(conv, tokenize=True, add_generation_prompt=True, return_dict=False)
        if isinstance(ids, dict):
            ids = ids["input_ids"]
        ids = list(ids)
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False, eos_token_id=None,
                                 pad_token_id=config.pad_token_id)
        new = out[0, len(ids):].tolist()
        golden.append({"messages": conv, "prompt_text": prompt, "prompt_ids": ids, "greedy_ids": new,
                       "greedy_text": hf_tok.decode(new, skip_special_tokens=False)})
    with open(os.path.join(args.out, "golden.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/serve_fixture/make_serving_fixture.py", "max_new_tokens": 24,
                   "conversations": golden}, f, indent=1, ensure_ascii=False)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
