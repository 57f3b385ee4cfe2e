#!/usr/bin/env python3
"""Goldens for how ninfer reads config.json fields, from transformers (the independent implementation).

Writes, under tests/data/reference/hf_config/ (see tools/reference/README.md, "Config-field goldens"):
  models/<name>/      tiny random checkpoints whose config.json is written by hand in the forms users have
                      (odd RoPE dims, absent head_dim / num_key_value_heads, top-level rope_theta, sliding-window
                      fields), then loaded back with transformers' from_pretrained
  golden/<name>/      f32 logits of every position for two prompts (computed in float64 from the loaded model)
  index.json          the models, their goldens, and `configs`: config.json variants with what transformers
                      resolves from each (head_dim, kv heads, inverse RoPE frequencies, layer types, ...) or, for
                      the ones ninfer refuses, what transformers does with them

Run:  scripts/tools-env.sh python tools/reference/make_config_fixtures.py [--out tests/data/reference/hf_config]
(the tools venv: torch, transformers (written against 5.24.0), safetensors, numpy). Deterministic (fixed seeds, one
thread); the existing fixtures of make_fixtures.py are not touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextRotaryEmbedding

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import entropy_bound, randomize  # noqa: E402 - the reference models' weights and entropy bound

PROMPT_LENGTHS = [17, 150]
REPO = Path(__file__).resolve().parents[2]

GDN = dict(linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
           linear_conv_kernel_dim=4)


def model_specs():
    """config.json exactly as written to disk (the forms users have), and why each is here."""
    return [
        dict(
            name="qwen35_rope_dim7",
            why="head_dim 30 x partial_rotary_factor 0.25 = 7.5: transformers uses int() = 7 in the frequency exponent "
                "and rotates 8 dims",
            seed=4321,
            padded_vocab_ids=200,  # also the padded-vocabulary golden: a tokenizer with ids 0..199 of the 256
            config=dict(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text", vocab_size=256,
                        hidden_size=48, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=30, layer_types=["linear_attention", "full_attention",
                                                                         "full_attention"],
                        rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=4096,
                        rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                             mrope_section=[2, 1, 1], mrope_interleaved=True),
                        **GDN),
        ),
        dict(
            name="qwen35_legacy_fields",
            why="no head_dim (class default 256, not hidden/heads), no num_key_value_heads (default 4), no "
                "layer_types (full_attention_interval 2), top-level rope_theta and partial_rotary_factor, tied",
            seed=4322,
            config=dict(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text", vocab_size=256,
                        hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
                        full_attention_interval=2, rms_norm_eps=1e-5, tie_word_embeddings=True,
                        max_position_embeddings=4096, rope_theta=1000000.0, partial_rotary_factor=0.125, **GDN),
        ),
        dict(
            name="qwen3_legacy_fields",
            why="no head_dim (class default 128), top-level rope_theta, partial_rotary_factor 0.5 (ignored by Qwen3's "
                "default RoPE: all 128 dims rotate), use_sliding_window with sliding_window = max_position_embeddings "
                "(layers >= max_window_layers are sliding_attention, a window that cannot bite)",
            seed=4323,
            config=dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=256, hidden_size=64,
                        intermediate_size=96, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1,
                        rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=2048,
                        rope_theta=1000000.0, partial_rotary_factor=0.5, use_sliding_window=True,
                        sliding_window=2048, max_window_layers=1),
        ),
    ]


def resolved_variants():
    """config.json variants ninfer accepts; the script records what transformers resolves from each."""
    q35 = dict(model_type="qwen3_5_text", vocab_size=64, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
               num_attention_heads=4, layer_types=["linear_attention", "full_attention"], **GDN)
    q3 = dict(model_type="qwen3", vocab_size=64, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
              num_attention_heads=32)  # the class default num_key_value_heads (32) must divide it
    return [
        ("qwen35_bare", q35),
        ("qwen35_head_dim_30_factor_0.25", {**q35, "head_dim": 30,
                                            "rope_parameters": {"rope_type": "default", "rope_theta": 1e7,
                                                                "partial_rotary_factor": 0.25}}),
        ("qwen35_head_dim_100_factor_0.29", {**q35, "head_dim": 100, "partial_rotary_factor": 0.29}),
        ("qwen35_head_dim_18_factor_0.5", {**q35, "head_dim": 18, "rope_theta": 5e5, "partial_rotary_factor": 0.5}),
        ("qwen35_rope_parameters_win_over_top_level", {**q35, "head_dim": 64, "rope_theta": 1.0e4,
                                                       "partial_rotary_factor": 0.5,
                                                       "rope_parameters": {"rope_type": "default", "rope_theta": 3e6,
                                                                           "partial_rotary_factor": 0.25}}),
        ("qwen35_rope_scaling_replaces_rope_parameters", {**q35, "head_dim": 32, "rope_theta": 2e4,
                                                          "rope_scaling": {"type": "default"},
                                                          "rope_parameters": {"rope_type": "default",
                                                                              "rope_theta": 9e9}}),
        ("qwen35_full_attention_interval_3", {**{k: v for k, v in q35.items() if k != "layer_types"},
                                            "num_hidden_layers": 6, "full_attention_interval": 3}),
        ("qwen35_legacy_layer_names", {**q35, "layer_types": ["mamba", "attention"]}),
        ("qwen35_multimodal_tied", {"model_type": "qwen3_5", "tie_word_embeddings": True,
                                    "text_config": {**q35, "head_dim": 16, "tie_word_embeddings": True}}),
        ("qwen3_bare", q3),
        ("qwen3_kv_null", {**q3, "num_key_value_heads": None, "head_dim": 8}),
        ("qwen3_partial_factor_ignored", {**q3, "head_dim": 16, "rope_parameters": {"rope_type": "default",
                                                                                    "rope_theta": 1e6,
                                                                                    "partial_rotary_factor": 0.5}}),
        ("qwen3_window_disabled", {**q3, "head_dim": 8, "use_sliding_window": False, "sliding_window": 64,
                                   "max_window_layers": 0}),
        ("qwen3_window_at_max_positions", {**q3, "head_dim": 8, "use_sliding_window": True, "sliding_window": 1024,
                                           "max_window_layers": 1, "max_position_embeddings": 1024}),
        ("qwen3_legacy_layer_names", {**q3, "head_dim": 8, "layer_types": ["attention", "full_attention"]}),
        # the form of the Qwen3 releases' config.json (transformers 4.51: rope_scaling null, top-level rope_theta,
        # sliding-window fields with the window off)
        ("qwen3_release_form", dict(architectures=["Qwen3ForCausalLM"], attention_bias=False, attention_dropout=0.0,
                                    bos_token_id=151643, eos_token_id=151645, head_dim=128, hidden_act="silu",
                                    hidden_size=1024, initializer_range=0.02, intermediate_size=3072,
                                    max_position_embeddings=40960, max_window_layers=28, model_type="qwen3",
                                    num_attention_heads=16, num_hidden_layers=28, num_key_value_heads=8,
                                    rms_norm_eps=1e-06, rope_scaling=None, rope_theta=1000000, sliding_window=None,
                                    tie_word_embeddings=True, torch_dtype="bfloat16", transformers_version="4.51.0",
                                    use_cache=True, use_sliding_window=False, vocab_size=151936)),
        # the Qwen3.5-27B release config.json (multimodal, nested text_config), as committed for the memory plan
        ("qwen3.5_27b_release", json.loads((REPO / "tests/data/plan/qwen3.5-27b/config.json").read_text())),
    ]


def refused_variants():
    """config.json variants ninfer refuses: (name, config, text the error must contain, why). The script records what
    transformers does with each (runs it, or fails)."""
    q35 = dict(model_type="qwen3_5_text", vocab_size=64, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=16,
               layer_types=["linear_attention", "full_attention"], **GDN)
    q3 = dict(model_type="qwen3", vocab_size=64, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=1024)
    rope = dict(rope_theta=1e6, partial_rotary_factor=0.25)
    return [
        ("rope_linear", {**q35, "rope_parameters": {"rope_type": "linear", "factor": 2.0, **rope}},
         "rope_type' is 'linear'"),
        ("rope_scaling_linear_old_form", {**q35, "rope_scaling": {"type": "linear", "factor": 2.0}},
         "rope_scaling.rope_type' is 'linear'"),
        ("rope_dynamic", {**q35, "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, **rope}},
         "rope_type' is 'dynamic'"),
        ("rope_yarn", {**q35, "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                                  "original_max_position_embeddings": 8192, **rope}},
         "rope_type' is 'yarn'"),
        ("qwen3_rope_yarn", {**q3, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                    "original_max_position_embeddings": 256}},
         "rope_type' is 'yarn'"),
        ("attention_bias", {**q3, "attention_bias": True}, "attention_bias' is true"),
        ("hidden_act_gelu", {**q35, "hidden_act": "gelu"}, "hidden_act' is 'gelu'"),
        ("qwen3_sliding_window_bites", {**q3, "use_sliding_window": True, "sliding_window": 128,
                                        "max_window_layers": 1},
         "sliding_window 128 < max_position_embeddings 1024"),
        ("qwen3_sliding_layer_types", {**q3, "use_sliding_window": True, "sliding_window": 128,
                                       "layer_types": ["sliding_attention", "full_attention"]},
         "layer_types[0] is sliding_attention"),
        ("qwen3_sliding_layer_without_window", {**q3, "layer_types": ["full_attention", "sliding_attention"]},
         "but there is no window"),
        ("qwen35_sliding_layer", {**q35, "layer_types": ["linear_attention", "sliding_attention"]},
         "layer_types[1]' is 'sliding_attention'"),
        ("rotary_odd_full_head", {**q35, "head_dim": 15, "rope_parameters": {"rope_type": "default",
                                                                           "partial_rotary_factor": 1.0}},
         "int(head_dim 15 x partial_rotary_factor 1)"),
        ("head_dim_null", {**q35, "head_dim": None}, "'head_dim' must be a positive integer, got null"),
        ("attn_output_gate_false", {**q35, "attn_output_gate": False}, "attn_output_gate' is false"),
        ("multimodal_tie_disagrees", {"model_type": "qwen3_5", "text_config": {**q35, "tie_word_embeddings": True}},
         "tie_word_embeddings false disagrees with text_config.tie_word_embeddings true"),
        ("mtp_dedicated_embeddings", {**q35, "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": True},
         "mtp_use_dedicated_embeddings' is true"),
    ]


class Writer:
    def __init__(self, root: Path):
        self.root = root

    def put(self, rel: str, t, dtype: str) -> dict:
        arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        arr = np.ascontiguousarray(arr, dtype="<f4" if dtype == "f32" else "<i4")
        fname = f"{rel}.{dtype}"
        (self.root / fname).parent.mkdir(parents=True, exist_ok=True)
        arr.tofile(self.root / fname)
        return dict(file=fname, dtype=dtype, shape=list(arr.shape))


def load_config(cfg: dict):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(cfg))
        return AutoConfig.from_pretrained(d)


def text_config(c):
    return c.get_text_config() if c.model_type == "qwen3_5" else c


def resolve(cfg: dict) -> dict:
    """What transformers' modeling code will use, read off the loaded config and its rotary embedding."""
    c = load_config(cfg)
    tc = text_config(c)
    rot = (Qwen3_5TextRotaryEmbedding if tc.model_type == "qwen3_5_text" else Qwen3RotaryEmbedding)(tc)
    out = dict(
        head_dim=getattr(tc, "head_dim", tc.hidden_size // tc.num_attention_heads),
        num_key_value_heads=tc.num_key_value_heads,
        vocab_size=tc.vocab_size, hidden_size=tc.hidden_size, num_hidden_layers=tc.num_hidden_layers,
        rms_norm_eps=tc.rms_norm_eps, max_position_embeddings=tc.max_position_embeddings,
        layer_types=list(tc.layer_types),
        # ForConditionalGeneration ties by the top-level config, ForCausalLM by the text config
        tie_word_embeddings=bool(c.tie_word_embeddings),
        inv_freq=[float(x) for x in rot.inv_freq],          # f32 values, as transformers computes them
        rotated_dims=2 * rot.inv_freq.numel(),                # cos/sin width = dims apply_rotary_pos_emb rotates
        attention_scaling=float(rot.attention_scaling),
    )
    if tc.model_type == "qwen3":
        out["sliding_window"] = tc.sliding_window
    return out


def transformers_outcome(cfg: dict) -> str:
    """What transformers does with a config ninfer refuses: builds and runs a 1-layer forward, or fails."""
    try:
        c = load_config(cfg)
        tc = text_config(c)
        tc._attn_implementation = "eager"
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(tc).eval()
        with torch.no_grad():
            model(input_ids=torch.arange(3, 40)[None])
        return "runs"
    except Exception as e:  # noqa: BLE001 - the message is the record
        return f"fails: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


@torch.no_grad()
def build_checkpoint(spec: dict, models_dir: Path):
    """Writes config.json as given plus model.safetensors; returns the model transformers loads from that dir."""
    d = models_dir / spec["name"]
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(spec["config"], indent=1) + "\n")
    c = AutoConfig.from_pretrained(d)
    c._attn_implementation = "eager"
    torch.manual_seed(spec["seed"])
    model = AutoModelForCausalLM.from_config(c)
    randomize(model, {"seed": spec["seed"], "a_range": (0.05, 3.0), "config": spec["config"],
                      "kind": "qwen3_5" if c.model_type == "qwen3_5_text" else "qwen3"})
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    if c.tie_word_embeddings:
        tensors.pop("lm_head.weight")
    save_file(tensors, d / "model.safetensors", metadata={"format": "pt"})
    loaded = AutoModelForCausalLM.from_pretrained(d, attn_implementation="eager").eval()
    for k, v in loaded.state_dict().items():
        assert torch.equal(v, model.state_dict()[k]), f"{spec['name']}: {k} did not round-trip"
    return loaded


@torch.no_grad()
def dump_model(spec: dict, out: Path, w: Writer) -> dict:
    name = spec["name"]
    model = build_checkpoint(spec, out / "models")
    model64 = AutoModelForCausalLM.from_pretrained(out / "models" / name, attn_implementation="eager").double().eval()
    g = torch.Generator().manual_seed(spec["seed"] + 7)
    rec = dict(checkpoint=f"models/{name}", why=spec["why"], architecture=type(model).__name__, prompts=[],
               rotary=dict(inv_freq=[float(x) for x in model.model.rotary_emb.inv_freq],
                           head_dim=model.model.layers[-1].self_attn.head_dim))
    golden_rows = []
    for i, n in enumerate(PROMPT_LENGTHS):
        ids = torch.randint(0, spec["config"]["vocab_size"], (n,), generator=g)
        lg = model(input_ids=ids[None], use_cache=False).logits[0]
        lg64 = model64(input_ids=ids[None], use_cache=False).logits[0]
        golden_rows.append(lg64)
        err = rel_err(lg, lg64)
        assert err < 5e-5, f"{name}: f32 vs f64 logits differ by {err}"
        rec["prompts"].append(dict(tokens=w.put(f"golden/{name}/prompt{i}_tokens", ids, "i32"),
                                   logits=w.put(f"golden/{name}/prompt{i}_logits", lg64.float(), "f32"),
                                   f32_vs_f64_rel_err=err))
    if "padded_vocab_ids" in spec:
        # Padded vocabulary: a prompt of ids that have a token (< padded_vocab_ids); the engine, whose artifact keeps
        # only those rows, must give these logits' first padded_vocab_ids columns.
        n = spec["padded_vocab_ids"]
        ids = torch.randint(0, n, (PROMPT_LENGTHS[-1],), generator=g)
        lg64 = model64(input_ids=ids[None], use_cache=False).logits[0]
        rec["padded_vocab"] = dict(tokenizer_ids=n, tokens=w.put(f"golden/{name}/padded_tokens", ids, "i32"),
                                   logits=w.put(f"golden/{name}/padded_logits", lg64.float(), "f32"))
        golden_rows.append(lg64)
    rec["entropy"] = entropy_bound(name, golden_rows)
    if name == "qwen35_rope_dim7":
        # The golden must tell the exponents apart: the same model with int(7.5) rounded to 8 in the exponent.
        rot = model64.model.rotary_emb
        rot.inv_freq = 1.0 / (spec["config"]["rope_parameters"]["rope_theta"] ** (torch.arange(0, 8, 2).float() / 8))
        last = rec["prompts"][-1]
        ids = torch.from_numpy(np.fromfile(out / last["tokens"]["file"], dtype="<i4").astype(np.int64))
        wrong = model64(input_ids=ids[None], use_cache=False).logits[0].float()
        right = torch.from_numpy(np.fromfile(out / last["logits"]["file"], dtype="<f4")).view_as(wrong)
        rec["rel_err_with_exponent_8"] = rel_err(wrong, right)
        assert rec["rel_err_with_exponent_8"] > 1e-2, rec["rel_err_with_exponent_8"]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "tests/data/reference/hf_config"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    w = Writer(out)
    index = dict(generator="tools/reference/make_config_fixtures.py", transformers=transformers.__version__,
                 torch=torch.__version__, attention="eager", models={}, configs=dict(resolved=[], refused=[]))
    for spec in model_specs():
        print(f"[{spec['name']}]", flush=True)
        index["models"][spec["name"]] = dump_model(spec, out, w)
    for name, cfg in resolved_variants():
        index["configs"]["resolved"].append(dict(name=name, config=cfg, transformers=resolve(cfg)))
    for name, cfg, message in refused_variants():
        rec = dict(name=name, config=cfg, error_contains=message, transformers=transformers_outcome(cfg))
        if "rope" in name:  # the frequencies and cos/sin scaling an implementation of this rope_type must match
            rec["transformers_rope"] = {k: v for k, v in resolve(cfg).items()
                                        if k in ("inv_freq", "rotated_dims", "attention_scaling")}
        index["configs"]["refused"].append(rec)
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {len(index['models'])} checkpoints, {len(index['configs']['resolved'])} resolved and "
          f"{len(index['configs']['refused'])} refused configs, {total / 1e6:.2f} MB under {out}")


if __name__ == "__main__":
    main()
