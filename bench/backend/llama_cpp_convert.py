#!/usr/bin/env python3
"""Converts the decode bench's synthetic Qwen3.5 or Qwen3 HF checkpoint to GGUF with llama.cpp's own converter.

The synthetic checkpoint has no real tokenizer; a small byte-level BPE tokenizer (tests/data/serve/model) is
copied next to it and the converter's pre-tokenizer hash check is told "qwen2" (the vocabulary is padded to the
config's vocab_size with [PAD] tokens, as the converter does for any short vocabulary). The weights, shapes and
architecture (qwen35, or qwen3 for the dense shape) are the checkpoint's. Usage:
  python bench/backend/llama_cpp_convert.py LLAMA_CPP_DIR HF_DIR OUT.gguf
"""
import json
import shutil
import sys
from pathlib import Path

llama, hf, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
repo = Path(__file__).resolve().parents[2]
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(repo / "tests/data/serve/model" / f, hf / f)
sys.path.insert(0, str(llama / "gguf-py"))
sys.path.insert(0, str(llama))
import conversion.base as base  # noqa: E402

base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"


# Qwen3's converter tries a SentencePiece tokenizer.model first and falls back to the BPE tokenizer.json on
# FileNotFoundError; there is no tokenizer.model here, so skip the attempt (and the optional sentencepiece import).
def _no_sentencepiece(self):
    raise FileNotFoundError("no tokenizer.model in the synthetic checkpoint")


base.TextModel._set_vocab_sentencepiece = _no_sentencepiece
import convert_hf_to_gguf  # noqa: E402

# The Qwen3.5 checkpoint has no MTP layer to convert; the converter refuses the flag for other architectures.
arch = json.loads((hf / "config.json").read_text())["architectures"][0]
sys.argv = ["convert_hf_to_gguf.py", str(hf), "--outtype", "bf16", "--outfile", out] + (["--no-mtp"] if "Qwen3_5" in arch else [])
convert_hf_to_gguf.main()
