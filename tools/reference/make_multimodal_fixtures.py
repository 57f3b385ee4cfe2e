#!/usr/bin/env python3
"""Goldens for ninfer-pack's import of the official Qwen3.5 checkpoint layouts, from transformers.

Writes, under tests/data/reference/multimodal/ (see tools/reference/README.md, "Multimodal and FP8 checkpoints"):
  models/qwen35_mm/      a tiny random Qwen3_5ForConditionalGeneration (the text model of make_fixtures.py's
                         qwen35_untied, a one-block vision tower, one MTP layer), save_pretrained in bf16:
                         model.language_model.*, model.visual.*, lm_head.weight, plus mtp.* as the releases ship it
  models/qwen35_mm_fp8/  the same weights in block-wise FP8: every linear of the text model and the MTP layer that
                         transformers' own FP8 quantizer tiles (Fp8Quantize, weight_block_size [16, 16]) is stored
                         float8_e4m3fn with an f32 weight_scale_inv per block; the rest (lm_head, the vision tower,
                         in_proj_a/b whose 6 rows are no whole block) stays bf16
  golden/<name>/         f32 logits of every position for two text-only prompts: transformers' forward of the
                         multimodal class loaded back with from_pretrained (bf16 weights; the FP8 checkpoint through
                         transformers' FP8 loading, which dequantizes on a machine without a GPU), computed in float64
  fp8_edges/             one FP8 weight whose shape is no whole number of blocks (the ceil-divided scale grid of
                         FP8Linear) and transformers' _dequantize_fp8_weight of it in f32
  index.json             the models, their goldens, the tensor counts per part

Run:  scripts/tools-env.sh python tools/reference/make_multimodal_fixtures.py   (tools/requirements.txt has accelerate)
in the venv of make_fixtures.py (torch, transformers 5.24.0, safetensors, numpy); transformers loads an FP8
checkpoint only with `accelerate` importable (it is not used otherwise). CPU, ~10 s, deterministic.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import FineGrainedFP8Config, GenerationConfig, Qwen3_5Config, Qwen3_5ForConditionalGeneration
from transformers.integrations.finegrained_fp8 import Fp8Quantize, _dequantize_fp8_weight

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools/train_tiny"))
from make_config_fixtures import PROMPT_LENGTHS, Writer, rel_err  # noqa: E402
from make_fixtures import check_torch_fallback, entropy_bound, model_specs, randomize  # noqa: E402
from model import Qwen3_5MTP  # noqa: E402 - tools/train_tiny: the mtp.* module of a Qwen3.5 checkpoint

TEXT_MODEL = "qwen35_untied"  # make_fixtures.py's model whose text config (and weight recipe) is reused
SEED = 2468
BLOCK = [16, 16]
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=4, temporal_patch_size=2,
              spatial_merge_size=2, out_hidden_size=80, num_position_embeddings=16)
# The layout of the releases' modules_to_not_convert (module names, prefixes of weight names).
NOT_CONVERTED = ["lm_head", "model.visual"]


def text_spec() -> dict:
    spec = next(s for s in model_specs() if s["name"] == TEXT_MODEL)
    return {**spec, "seed": SEED, "config": {**spec["config"], "mtp_num_hidden_layers": 1}}


@torch.no_grad()
def build(spec: dict):
    """The multimodal model (random text weights by make_fixtures' recipe, the vision tower as transformers inits
    it) and the state dict a release ships: the model's own plus mtp.*."""
    torch.manual_seed(SEED)
    config = Qwen3_5Config(text_config=spec["config"], vision_config=VISION, tie_word_embeddings=False)
    config._attn_implementation = "eager"
    model = Qwen3_5ForConditionalGeneration(config)
    mtp = Qwen3_5MTP(model.config.text_config)
    # randomize() reads the names of a causal LM: model.*, lm_head.*, and mtp.* alike
    randomize(torch.nn.ModuleDict({"model": model.model.language_model, "lm_head": model.lm_head, "mtp": mtp}), spec)
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=1, pad_token_id=2)
    state = {**model.state_dict(), **{"mtp." + k: v for k, v in mtp.state_dict().items()}}
    return model.eval(), {k: v.to(torch.bfloat16).contiguous() for k, v in state.items()}


def save(model, state: dict, d: Path, quantization_config: dict | None = None):
    model.to(torch.bfloat16).save_pretrained(d)  # config.json, generation_config.json as transformers writes them
    if quantization_config is not None:
        cfg = json.loads((d / "config.json").read_text())
        cfg["quantization_config"] = quantization_config
        (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for f in d.glob("model*.safetensors*"):
        f.unlink()
    save_file(state, d / "model.safetensors", metadata={"format": "pt"})


def quantize_fp8(state: dict) -> tuple[dict, list[str]]:
    """transformers' own save-side FP8 quantizer (Fp8Quantize, CPU-capable) on every linear weight it tiles."""
    op = Fp8Quantize(types.SimpleNamespace(quantization_config=FineGrainedFP8Config(weight_block_size=BLOCK)))
    out, quantized = {}, []
    for k, v in state.items():
        linear = k.endswith(".weight") and v.dim() == 2 and "embed_tokens" not in k and "conv1d" not in k
        if not linear or any(k.startswith(m + ".") for m in NOT_CONVERTED):
            out[k] = v
            continue
        parts = op._quantize_one(k, v)
        out.update(parts)
        if len(parts) == 2:
            quantized.append(k)
    return out, quantized


@torch.no_grad()
def golden(d: Path, name: str, vocab: int, w: Writer) -> tuple[list[dict], Qwen3_5ForConditionalGeneration]:
    model = Qwen3_5ForConditionalGeneration.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager")
    model = model.double().eval()
    g = torch.Generator().manual_seed(SEED + 7)
    prompts, rows = [], []
    for i, n in enumerate(PROMPT_LENGTHS):
        ids = torch.randint(3, vocab, (n,), generator=g)  # text only: no image or video tokens
        logits = model(input_ids=ids[None], use_cache=False).logits[0]
        rows.append(logits)
        prompts.append(dict(tokens=w.put(f"golden/{name}/prompt{i}_tokens", ids, "i32"),
                            logits=w.put(f"golden/{name}/prompt{i}_logits", logits.float(), "f32")))
    entropy_bound(name, rows)
    return prompts, model


def edge_case(w: Writer) -> dict:
    """A weight [40, 50] with blocks [16, 16]: scale grid [3, 4] ceil-divided, partial blocks at both edges."""
    g = torch.Generator().manual_seed(SEED + 11)
    weight = (torch.randn(40, 50, generator=g) * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
    scale_inv = torch.rand(3, 4, generator=g) * 0.01 + 1e-4
    deq = _dequantize_fp8_weight(weight, scale_inv, BLOCK, torch.float32)
    d = w.root / "fp8_edges"
    d.mkdir(parents=True)
    save_file({"w.weight": weight, "w.weight_scale_inv": scale_inv}, d / "weights.safetensors")
    return dict(safetensors="fp8_edges/weights.safetensors", block=BLOCK,
                dequantized=w.put("fp8_edges/dequantized", deq, "f32"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "tests/data/reference/multimodal"))
    args = ap.parse_args()
    check_torch_fallback()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    (out / "models").mkdir(parents=True)
    w = Writer(out)
    spec = text_spec()
    vocab = spec["config"]["vocab_size"]
    index = dict(generator="tools/reference/make_multimodal_fixtures.py", transformers=transformers.__version__,
                 torch=torch.__version__, text_model=TEXT_MODEL, models={})

    model, state = build(spec)
    mm = out / "models/qwen35_mm"
    save(model, state, mm)
    prompts, loaded = golden(mm, "qwen35_mm", vocab, w)
    for k, v in loaded.state_dict().items():  # what transformers loaded is the checkpoint
        assert torch.equal(v, state[k].double()), k
    index["models"]["qwen35_mm"] = dict(
        checkpoint="models/qwen35_mm", prompts=prompts,
        tensors={p: sum(k.startswith(p) for k in state) for p in ("model.language_model.", "model.visual.", "mtp.",
                                                                   "lm_head.")})

    fp8_state, quantized = quantize_fp8(state)
    qc = dict(quant_method="fp8", fmt="e4m3", activation_scheme="dynamic", weight_block_size=BLOCK,
              modules_to_not_convert=NOT_CONVERTED)
    fp8 = out / "models/qwen35_mm_fp8"
    save(model, fp8_state, fp8, qc)
    prompts, loaded = golden(fp8, "qwen35_mm_fp8", vocab, w)
    for k in quantized:  # transformers' loading dequantized each weight to (fp8 * scale_inv in f32) rounded to bf16
        if k.startswith("mtp."):
            continue  # transformers drops mtp.*
        want = _dequantize_fp8_weight(fp8_state[k], fp8_state[k[:-len("weight")] + "weight_scale_inv"], BLOCK,
                                      torch.float32).to(torch.bfloat16)
        assert torch.equal(loaded.state_dict()[k], want.double()), k
    ref = index["models"]["qwen35_mm"]["prompts"][-1]["logits"]["file"]
    bf16_logits = torch.from_numpy(np.fromfile(out / ref, dtype="<f4"))
    fp8_logits = torch.from_numpy(np.fromfile(out / prompts[-1]["logits"]["file"], dtype="<f4"))
    index["models"]["qwen35_mm_fp8"] = dict(
        checkpoint="models/qwen35_mm_fp8", prompts=prompts, quantization_config=qc, quantized_weights=len(quantized),
        quantized_mtp_weights=sum(k.startswith("mtp.") for k in quantized),
        rel_err_vs_bf16_model=rel_err(fp8_logits, bf16_logits))
    index["fp8_edges"] = edge_case(w)
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote 2 checkpoints ({len(quantized)} FP8 weights), {total / 1e6:.2f} MB under {out}")


if __name__ == "__main__":
    main()
