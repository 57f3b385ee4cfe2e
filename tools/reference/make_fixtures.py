#!/usr/bin/env python3
"""Builds ninfer's golden reference fixtures with transformers (the independent implementation).

Writes, under tests/data/reference/ (see tools/reference/README.md for the layout):
  models/<name>/          tiny random HF checkpoints (config.json, model.safetensors, generation_config.json)
  golden/<name>/          f32 logits for several prompts, 64-token greedy continuations
  ops/<name>/layer<i>/    intermediate tensors of one decoder layer, op by op
  index.json              every file above with its dtype and shape

Run:  scripts/tools-env.sh python tools/reference/make_fixtures.py [--out tests/data/reference]
Deterministic: fixed seeds, one torch thread, the eager attention path and the torch (non-FLA) GDN kernels.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM
from transformers.models.qwen3_5 import modeling_qwen3_5 as q35
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5ForCausalLM

OUT_GAIN = float(os.environ.get("NINFER_FIXTURE_OUT_GAIN", "0.5"))
GREEDY_TOKENS = 64
PROMPT_LENGTHS = [1, 17, 64, 333]  # 333 crosses the 64-token delta-rule chunks five times, ends mid-chunk
GREEDY_PROMPTS = [1, 3]            # indices into PROMPT_LENGTHS whose greedy continuation is recorded
LM_HEAD_GAIN = 2.5                 # logits ~ N(0, 2.5²) over the vocabulary, tied or untied (entropy bound below)
# Every golden must have entropy (a near one-hot model would pass a greedy test with almost any bug): over a model's
# golden rows the median top-1 probability stays below MAX_MEDIAN_TOP1, and every greedy path has top-2 gaps below
# SMALL_GAP nats (close calls the engine must get right) yet none under MIN_GREEDY_GAP (f32 vs f64 and summation order
# must not flip an argmax).
MAX_MEDIAN_TOP1 = 0.6
SMALL_GAP = 0.5
MIN_GREEDY_GAP = 1e-3
OPS_TOKENS = 100                   # tokens fed to the op-by-op layer dumps (2 delta-rule chunks, last partial)


def model_specs():
    """The three tiny configs. Sizes are deliberately all different (heads, GQA, head dims, patterns)."""
    return [
        dict(
            name="qwen35_tied",
            kind="qwen3_5",
            seed=1234,
            config=dict(
                vocab_size=384, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=32,  # GQA 2
                layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
                linear_num_key_heads=2, linear_num_value_heads=4,  # GDN group 2
                linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
                rms_norm_eps=1e-6, tie_word_embeddings=True, max_position_embeddings=4096,
                rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                                     mrope_section=[2, 1, 1], mrope_interleaved=True),
                bos_token_id=0, eos_token_id=1, pad_token_id=2,
            ),
            a_range=(0.05, 3.0),  # moderate decays (A up to 16 makes tiny GDN outputs that amplify bf16 rounding)
            bf16_copy=False,
        ),
        dict(
            name="qwen35_untied",
            kind="qwen3_5",
            seed=5678,
            config=dict(
                vocab_size=448, hidden_size=80, intermediate_size=128, num_hidden_layers=5,
                num_attention_heads=6, num_key_value_heads=2, head_dim=16,  # GQA 3
                layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention",
                             "full_attention"],
                linear_num_key_heads=2, linear_num_value_heads=6,  # GDN group 3
                linear_key_head_dim=24, linear_value_head_dim=16, linear_conv_kernel_dim=4,  # dk != dv
                rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=4096,
                rope_parameters=dict(rope_type="default", rope_theta=1000000.0, partial_rotary_factor=0.5,
                                     mrope_section=[2, 1, 1], mrope_interleaved=True),
                bos_token_id=0, eos_token_id=1, pad_token_id=2,
            ),
            a_range=(0.02, 1.0),  # slow decays: state carries across chunk boundaries
            bf16_copy=True,
        ),
        dict(
            name="qwen3_dense",
            kind="qwen3",
            seed=9012,
            config=dict(
                vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=1, head_dim=24,  # GQA 4, head_dim != hidden/heads
                rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=4096,
                rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
                bos_token_id=0, eos_token_id=1, pad_token_id=2,
            ),
            bf16_copy=False,
        ),
    ]


class Writer:
    """Writes raw little-endian tensors and collects their index entries."""

    def __init__(self, root: Path):
        self.root = root
        self.entries: dict[str, dict] = {}

    def put(self, rel: str, t, dtype: str = "f32") -> dict:
        arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        if dtype == "f32":
            arr = np.ascontiguousarray(arr, dtype="<f4")
            fname = rel + ".f32"
        elif dtype == "i32":
            arr = np.ascontiguousarray(arr, dtype="<i4")
            fname = rel + ".i32"
        else:
            raise ValueError(dtype)
        path = self.root / fname
        path.parent.mkdir(parents=True, exist_ok=True)
        arr.tofile(path)
        entry = dict(file=fname, dtype=dtype, shape=list(arr.shape))
        self.entries[rel] = entry
        return entry


def check_torch_fallback():
    """transformers picks FLA / causal-conv1d / hub kernels when importable; the fixtures must use its torch code."""
    for pkg in ("fla", "causal_conv1d", "kernels"):
        if importlib.util.find_spec(pkg) is not None:
            sys.exit(f"error: optional package '{pkg}' is importable; uninstall it so transformers' torch path runs")
    # The decorated functions keep the torch implementation when the optional package is missing.
    for fn in (q35.torch_chunk_gated_delta_rule, q35.torch_recurrent_gated_delta_rule, q35.causal_conv1d_fn,
               q35.causal_conv1d_update):
        assert fn.__module__ == q35.__name__, fn


def randomize(model: torch.nn.Module, spec: dict):
    """Replaces HF's tiny init with O(1) random weights so logits are well spread (stable greedy argmax)."""
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    a_lo, a_hi = spec.get("a_range", (0.01, 16.0))
    # A tied head scores with the N(0,1) embedding rows, sqrt(hidden) times the untied head's rows, and the residual
    # stream still holds the input token's own row, whose score is |e|² = hidden: the logits come out nearly one-hot
    # (top-2 gaps of ~20 nats) and prove little. The tied model's final norm gets zero-mean effective weights of scale
    # LM_HEAD_GAIN / sqrt(hidden): every logit ~ N(0, LM_HEAD_GAIN²), the input token's own included.
    cfg = spec["config"]
    final_norm_scale = LM_HEAD_GAIN / cfg["hidden_size"] ** 0.5 if cfg.get("tie_word_embeddings") else None
    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = p.shape
            if name.endswith("embed_tokens.weight"):
                p.copy_(torch.randn(shape, generator=g))
            elif name.endswith("lm_head.weight"):
                p.copy_(torch.randn(shape, generator=g) * (LM_HEAD_GAIN / shape[1] ** 0.5))
            elif name.endswith("conv1d.weight"):  # [C, 1, K]
                p.copy_(torch.randn(shape, generator=g) * (1.0 / shape[-1] ** 0.5))
            elif name.endswith("A_log"):
                p.copy_(torch.empty(shape).uniform_(a_lo, a_hi, generator=g).log())
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn(shape, generator=g) * 0.5)
            elif name.endswith("linear_attn.norm.weight"):  # gated RMSNorm: plain w
                p.copy_(1.0 + 0.2 * torch.randn(shape, generator=g))
            elif "norm" in name and p.dim() == 1:
                # effective weight 1 + N(0, 0.2²); N(0, final_norm_scale²) on a tied model's final norm
                r = 0.2 * torch.randn(shape, generator=g)
                if name == "model.norm.weight" and final_norm_scale is not None:
                    eff = (final_norm_scale / 0.2) * r
                    p.copy_(eff - 1.0 if spec["kind"] == "qwen3_5" else eff)
                elif spec["kind"] == "qwen3_5":  # zero-centred: stores w of (1 + w)
                    p.copy_(r)
                else:  # Qwen3: plain w
                    p.copy_(1.0 + r)
            elif p.dim() == 2:  # nn.Linear [out, in]; the residual-branch outputs get a smaller gain so the random
                # network stays well conditioned (bf16 rounding must not be amplified into O(1) logit changes)
                gain = OUT_GAIN if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")) else 1.0
                p.copy_(torch.randn(shape, generator=g) * (gain / shape[1] ** 0.5))
            else:
                raise RuntimeError(f"unhandled parameter {name} {tuple(shape)}")
    if spec["config"].get("tie_word_embeddings"):
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def build_model(spec: dict):
    torch.manual_seed(spec["seed"])
    if spec["kind"] == "qwen3_5":
        cfg = Qwen3_5TextConfig(**spec["config"])
        cfg._attn_implementation = "eager"
        model = Qwen3_5ForCausalLM(cfg)
    else:
        cfg = Qwen3Config(**spec["config"])
        cfg._attn_implementation = "eager"
        model = Qwen3ForCausalLM(cfg)
    randomize(model, spec)
    model.eval()
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=1, pad_token_id=2)
    return model


def make_prompts(spec: dict):
    g = torch.Generator().manual_seed(spec["seed"] + 7)
    vocab = spec["config"]["vocab_size"]
    # ids from 3 upwards: never bos/eos/pad, so stop tokens do not interfere
    return [torch.randint(3, vocab, (n,), generator=g) for n in PROMPT_LENGTHS]


@torch.no_grad()
def full_logits(model, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids[None], use_cache=False).logits[0]


@torch.no_grad()
def greedy(model, prompt: torch.Tensor, n: int):
    """Greedy decode through transformers' cache (chunked prefill, recurrent/1-token decode)."""
    out = model(input_ids=prompt[None], use_cache=True)
    cache = out.cache
    tokens = []
    step_logits = [out.logits[0, -1]]
    nxt = int(out.logits[0, -1].argmax())
    for _ in range(n):
        tokens.append(nxt)
        if len(tokens) == n:
            break
        out = model(input_ids=torch.tensor([[nxt]]), cache=cache, use_cache=True)
        cache = out.cache
        step_logits.append(out.logits[0, -1])
        nxt = int(out.logits[0, -1].argmax())
    return torch.tensor(tokens), torch.stack(step_logits)


def top2_gap(logits: torch.Tensor) -> float:
    top = logits.topk(2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def entropy_bound(name: str, rows: list[torch.Tensor], greedy_paths: list[torch.Tensor] = ()) -> dict:
    """Asserts the entropy bound (MAX_MEDIAN_TOP1, SMALL_GAP, MIN_GREEDY_GAP above) over a model's golden logits:
    `rows` every golden logits tensor, `greedy_paths` the step logits of each greedy continuation. Returns the stats."""
    every = torch.cat([r.reshape(-1, r.shape[-1]).double() for r in [*rows, *greedy_paths]])
    top = every.topk(2, dim=-1).values
    gaps = top[:, 0] - top[:, 1]
    stats = dict(median_top1_prob=float(every.softmax(-1).max(-1).values.median()),
                 small_gap_fraction=float((gaps < SMALL_GAP).double().mean()))
    assert stats["median_top1_prob"] < MAX_MEDIAN_TOP1, f"{name}: logits too peaked {stats}"
    assert stats["small_gap_fraction"] > 0, f"{name}: no top-2 gap below {SMALL_GAP} nats {stats}"
    for i, path in enumerate(greedy_paths):
        top = path.double().topk(2, dim=-1).values
        g = top[:, 0] - top[:, 1]
        assert (g < SMALL_GAP).any(), f"{name}: greedy path {i} has no close call (min gap {float(g.min())})"
        assert g.min() >= MIN_GREEDY_GAP, f"{name}: greedy path {i} passes a near tie ({float(g.min())} nats)"
    if greedy_paths:
        stats["min_greedy_top2_gap"] = min(top2_gap(p) for p in greedy_paths)
    return stats


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


@torch.no_grad()
def dump_golden(model, spec: dict, w: Writer) -> dict:
    name = spec["name"]
    prompts = make_prompts(spec)
    rec = dict(prompts=[], greedy=[])
    model64 = build_model(spec).double()
    golden_rows, greedy_paths = [], []
    for i, p in enumerate(prompts):
        lg = full_logits(model, p)
        lg64 = full_logits(model64, p)
        golden_rows.append(lg64)
        err = rel_err(lg, lg64)
        assert err < 5e-5, f"{name}: f32 vs f64 logits differ by {err}"
        # the stored golden logits are computed in float64 and rounded to f32 (torch's own f32 run is err away)
        rec["prompts"].append(dict(
            tokens=w.put(f"golden/{name}/prompt{i}_tokens", p, "i32"),
            logits=w.put(f"golden/{name}/prompt{i}_logits", lg64.float()),
            f32_vs_f64_rel_err=err,
            min_top2_gap=top2_gap(lg),
        ))
    for i in GREEDY_PROMPTS:
        p = prompts[i]
        toks, step_logits = greedy(model, p, GREEDY_TOKENS)
        # cross-check: one uncached forward over prompt + continuation gives the same argmax at every step
        seq = torch.cat([p, toks])
        lg = full_logits(model, seq)
        ref_steps = lg[len(p) - 1: len(p) - 1 + GREEDY_TOKENS]
        assert torch.equal(ref_steps.argmax(-1), toks), f"{name}: cached and uncached greedy disagree"
        err = rel_err(step_logits, ref_steps)
        assert err < 1e-4, f"{name}: cached decode logits differ from uncached by {err}"
        toks64, step_logits64 = greedy(model64, p, GREEDY_TOKENS)
        assert torch.equal(toks64, toks), f"{name}: f32 and f64 greedy disagree"
        step_logits = step_logits64.float()
        greedy_paths.append(step_logits64)
        rec["greedy"].append(dict(
            prompt_index=i,
            tokens=w.put(f"golden/{name}/greedy{i}_tokens", toks, "i32"),
            # logits that produced each continuation token: row j predicts tokens[j]
            step_logits=w.put(f"golden/{name}/greedy{i}_step_logits", step_logits),
            cached_vs_uncached_rel_err=err,
            min_top2_gap=top2_gap(step_logits),
        ))
    rec["entropy"] = entropy_bound(name, golden_rows, greedy_paths)
    return rec


@torch.no_grad()
def dump_bf16(model, spec: dict, w: Writer, models_dir: Path) -> dict:
    """bf16 checkpoint + logits of the bf16-rounded weights computed in f32 (what an engine with bf16 weights and f32
    activations should match closely), next to the f32 logits in golden/<name>/."""
    name = spec["name"] + "_bf16"
    mb = build_model(spec)
    for p in mb.parameters():
        p.copy_(p.to(torch.bfloat16).to(torch.float32))
    mb_save = build_model(spec).to(torch.bfloat16)
    mb_save.load_state_dict({k: v.to(torch.bfloat16) for k, v in mb.state_dict().items()})
    out_dir = models_dir / name
    mb_save.save_pretrained(out_dir, safe_serialization=True)
    prompts = make_prompts(spec)
    rec = dict(prompts=[])
    mb = mb.double()
    model64 = build_model(spec).double()
    golden_rows = []
    for i, p in enumerate(prompts):
        lg = full_logits(mb, p).float()
        lg32 = full_logits(model64, p).float()
        golden_rows.append(lg)
        rec["prompts"].append(dict(
            tokens=f"golden/{spec['name']}/prompt{i}_tokens",
            logits=w.put(f"golden/{name}/prompt{i}_logits", lg),
            rel_err_vs_f32_weights=rel_err(lg, lg32),
        ))
    rec["entropy"] = entropy_bound(name, golden_rows)
    return rec


class Recorder:
    """Captures the tensors a decoder layer's ops consume and produce."""

    def __init__(self, w: Writer, prefix: str):
        self.w, self.prefix, self.names = w, prefix, {}

    def __call__(self, key: str, t: torch.Tensor):
        self.names[key] = self.w.put(f"{self.prefix}/{key}", t.float())
        return t


@torch.no_grad()
def dump_layer_ops(model, spec: dict, layer_idx: int, w: Writer) -> dict:
    """Runs the model on OPS_TOKENS prompt tokens, captures the input of layer `layer_idx`, and recomputes that layer
    op by op with transformers' own functions, recording each op's inputs and outputs (batch dim dropped)."""
    name = spec["name"]
    g = torch.Generator().manual_seed(spec["seed"] + 99)
    ids = torch.randint(3, spec["config"]["vocab_size"], (OPS_TOKENS,), generator=g)
    captured = {}
    layer = model.model.layers[layer_idx]

    def hook(mod, args, kwargs, out):
        captured["x"] = (args[0] if args else kwargs["hidden_states"]).clone()
        captured["pos_emb"] = kwargs["position_embeddings"]
        captured["out"] = (out[0] if isinstance(out, tuple) else out).clone()

    h = layer.register_forward_hook(hook, with_kwargs=True)
    model(input_ids=ids[None], use_cache=False)
    h.remove()

    r = Recorder(w, f"ops/{name}/layer{layer_idx}")
    x = captured["x"]  # [1, T, H]
    r.names["tokens"] = w.put(f"ops/{name}/layer{layer_idx}/tokens", ids, "i32")
    r("x", x[0])
    xn = layer.input_layernorm(x)
    r("input_norm_weight", layer.input_layernorm.weight)
    r("input_norm_out", xn[0])
    kind = spec["kind"]
    block = getattr(layer, "block_type", "full_attention") if kind == "qwen3_5" else "full_attention"
    if block == "linear_attention":
        mix = dump_gdn(layer.linear_attn, xn, r)
    else:
        mix = dump_attention(layer.self_attn, xn, captured["pos_emb"], r, kind)
    hmid = x + mix
    r("residual1", hmid[0])
    hn = layer.post_attention_layernorm(hmid)
    r("post_norm_weight", layer.post_attention_layernorm.weight)
    r("post_norm_out", hn[0])
    mlp = layer.mlp
    gate = mlp.gate_proj(hn)
    up = mlp.up_proj(hn)
    act = F.silu(gate) * up
    down = mlp.down_proj(act)
    r("mlp_gate", gate[0]); r("mlp_up", up[0]); r("mlp_act", act[0]); r("mlp_down", down[0])
    out = hmid + down
    r("out", out[0])
    err = rel_err(out, captured["out"])
    assert err < 1e-6, f"{name} layer {layer_idx}: op-by-op recomposition differs from the layer by {err}"
    return dict(model=name, layer=layer_idx, type=block, tokens=OPS_TOKENS, tensors=r.names)


def dump_gdn(la, xn, r: Recorder) -> torch.Tensor:
    T = xn.shape[1]
    r("in_proj_qkv_weight", la.in_proj_qkv.weight)
    qkv = la.in_proj_qkv(xn)                     # [1, T, conv_dim]
    r("qkv", qkv[0])
    z = la.in_proj_z(xn); b = la.in_proj_b(xn); a = la.in_proj_a(xn)
    r("z", z[0]); r("b", b[0]); r("a", a[0])
    r("conv_weight", la.conv1d.weight.squeeze(1))  # [conv_dim, K]
    conv = q35.causal_conv1d_fn(qkv.transpose(1, 2), la.conv1d.weight.squeeze(1), la.conv1d.bias,
                                activation=la.activation).transpose(1, 2)
    r("conv_out", conv[0])                      # after SiLU
    q, k, v = torch.split(conv, [la.key_dim, la.key_dim, la.value_dim], dim=-1)
    q = q.reshape(1, T, -1, la.head_k_dim); k = k.reshape(1, T, -1, la.head_k_dim)
    v = v.reshape(1, T, -1, la.head_v_dim)
    beta = b.sigmoid()
    gdecay = -la.A_log.float().exp() * F.softplus(a.float() + la.dt_bias)
    r("A_log", la.A_log); r("dt_bias", la.dt_bias)
    r("beta", beta[0]); r("g", gdecay[0])
    r("q_l2", q35.l2norm(q, dim=-1, eps=1e-6)[0]); r("k_l2", q35.l2norm(k, dim=-1, eps=1e-6)[0])
    r("v", v[0])
    o_chunk, s_chunk = q35.torch_chunk_gated_delta_rule(q, k, v, g=gdecay, beta=beta, output_final_state=True,
                                                        use_qk_l2norm_in_kernel=True)
    o_rec, s_rec = q35.torch_recurrent_gated_delta_rule(q, k, v, g=gdecay, beta=beta, output_final_state=True,
                                                        use_qk_l2norm_in_kernel=True)
    assert rel_err(o_chunk, o_rec) < 1e-4 and rel_err(s_chunk, s_rec) < 1e-4
    r("delta_out_chunked", o_chunk[0]); r("delta_state_chunked", s_chunk[0])      # [T,nv,dv], [nv,dk,dv]
    r("delta_out_recurrent", o_rec[0]); r("delta_state_recurrent", s_rec[0])
    # a second segment continuing from the state: exercises initial_state
    T2 = 37
    q2, k2, v2 = (t[:, :T2].flip(1).contiguous() for t in (q, k, v))
    g2, b2 = gdecay[:, :T2].flip(1).contiguous(), beta[:, :T2].flip(1).contiguous()
    o2, s2 = q35.torch_chunk_gated_delta_rule(q2, k2, v2, g=g2, beta=b2, initial_state=s_chunk.clone(),
                                              output_final_state=True, use_qk_l2norm_in_kernel=True)
    r("cont_q", q2[0]); r("cont_k", k2[0]); r("cont_v", v2[0]); r("cont_g", g2[0]); r("cont_beta", b2[0])
    r("cont_out", o2[0]); r("cont_state", s2[0])
    core = o_chunk.reshape(-1, la.head_v_dim)
    zz = z.reshape(-1, la.head_v_dim)
    normed = la.norm(core, zz).reshape(1, T, -1)
    r("gated_norm_weight", la.norm.weight)
    r("gated_norm_out", normed[0])
    r("out_proj_weight", la.out_proj.weight)
    y = la.out_proj(normed)
    r("mixer_out", y[0])
    ref = la(xn)
    assert rel_err(y, ref) < 1e-6
    return y


def dump_attention(sa, xn, pos_emb, r: Recorder, kind: str) -> torch.Tensor:
    T = xn.shape[1]
    hd = sa.head_dim
    cos, sin = pos_emb
    r("rope_cos", cos[0]); r("rope_sin", sin[0])  # [T, rotary_dim]
    if kind == "qwen3_5":
        qg = sa.q_proj(xn)
        r("q_proj_out", qg[0])                     # per-head [query | gate]
        q, gate = torch.chunk(qg.view(1, T, -1, hd * 2), 2, dim=-1)
        gate = gate.reshape(1, T, -1)
        r("gate", gate[0])
    else:
        q = sa.q_proj(xn).view(1, T, -1, hd)
        gate = None
    k = sa.k_proj(xn).view(1, T, -1, hd)
    v = sa.v_proj(xn).view(1, T, -1, hd)
    r("q_pre_norm", q[0]); r("k_pre_norm", k[0]); r("v", v[0])
    r("q_norm_weight", sa.q_norm.weight); r("k_norm_weight", sa.k_norm.weight)
    qn = sa.q_norm(q); kn = sa.k_norm(k)
    r("q_normed", qn[0]); r("k_normed", kn[0])
    mod = sys.modules[type(sa).__module__]
    qr, kr = mod.apply_rotary_pos_emb(qn.transpose(1, 2), kn.transpose(1, 2), cos, sin)
    r("q_rope", qr.transpose(1, 2)[0]); r("k_rope", kr.transpose(1, 2)[0])  # [T, heads, hd]
    mask = torch.full((T, T), float("-inf")).triu(1)[None, None]
    attn, _ = mod.eager_attention_forward(sa, qr, kr, v.transpose(1, 2), mask, scaling=sa.scaling)
    attn = attn.reshape(1, T, -1)
    r("attn_out", attn[0])                          # [T, heads*hd], before the output gate
    if gate is not None:
        attn = attn * torch.sigmoid(gate)
        r("attn_gated", attn[0])
    y = sa.o_proj(attn)
    r("mixer_out", y[0])
    return y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "tests/data/reference"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    check_torch_fallback()
    out = Path(args.out)
    for sub in ("models", "golden", "ops"):
        shutil.rmtree(out / sub, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    w = Writer(out)
    index = dict(
        generator="tools/reference/make_fixtures.py",
        transformers=transformers.__version__, torch=torch.__version__,
        gdn_kernels="transformers torch fallback (torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule, "
                    "causal_conv1d_fn/update); fla, causal_conv1d and kernels not installed",
        attention="eager",
        greedy_tokens=GREEDY_TOKENS, delta_rule_chunk=64,
        models={}, ops=[],
    )
    for spec in model_specs():
        name = spec["name"]
        print(f"[{name}] building", flush=True)
        model = build_model(spec)
        model.save_pretrained(out / "models" / name, safe_serialization=True)
        rec = dict(kind=spec["kind"], architecture=type(model).__name__, checkpoint=f"models/{name}",
                   seed=spec["seed"], config=spec["config"])
        rec.update(dump_golden(model, spec, w))
        index["models"][name] = rec
        if spec.get("bf16_copy"):
            print(f"[{name}] bf16 copy", flush=True)
            brec = dump_bf16(model, spec, w, out / "models")
            index["models"][name + "_bf16"] = dict(kind=spec["kind"], architecture=type(model).__name__,
                                                   checkpoint=f"models/{name}_bf16", weights_of=name, **brec)
    # op-by-op dumps: one GDN and one gated-attention layer of the untied hybrid, one Qwen3 layer
    for spec in model_specs():
        model = build_model(spec)
        layers = {"qwen35_untied": [0, 1], "qwen3_dense": [0]}.get(spec["name"], [])
        for li in layers:
            print(f"[{spec['name']}] ops of layer {li}", flush=True)
            index["ops"].append(dump_layer_ops(model, spec, li, w))
    index["files"] = w.entries
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {len(w.entries)} tensors + {len(index['models'])} checkpoints, {total / 1e6:.2f} MB under {out}")


if __name__ == "__main__":
    main()
