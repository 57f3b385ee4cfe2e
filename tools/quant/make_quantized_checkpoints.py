#!/usr/bin/env python3
"""Writes tiny NVFP4 checkpoints of one Qwen3.5-shaped model, quantized by the reference libraries, for ninfer-pack's
import tests (tests/quant/pack_import_test.cpp). Under tests/data/quant/checkpoints/:

  bf16/                the source: transformers' Qwen3_5ForCausalLM with a tiny random config, saved in bf16
                       (config.json, model.safetensors, generation_config.json)
  modelopt/            the same weights through NVIDIA ModelOpt's real path: mtq.quantize(model, NVFP4_DEFAULT_CFG,
                       calibration forward) then modelopt.torch.export.export_hf_checkpoint (hf_quant_config.json,
                       config.json quantization_config, <m>.weight u8 / weight_scale e4m3 / weight_scale_2 / input_scale)
  compressed_tensors/  the same weights through compressed-tensors' real compressor: apply_quantization_config with
                       the NVFP4 preset (ignore lm_head, linear_attn.in_proj_a/b: the modules ModelOpt's default
                       leaves out), weight_global_scale / weight_scale from its own generate_gparam /
                       calculate_qparams on the f32 weights (per tensor: no fused-group sharing, which is
                       llm-compressor's addition, not the library's), input_global_scale from the same
                       calibration activations ModelOpt sees (unquantized forward), then
                       ModelCompressor.compress_model + save_pretrained + update_config ("nvfp4-pack-quantized")
  calib_ids.i32        the calibration token ids; index.json: versions, config, which modules each library quantized,
                       and which fused groups ModelOpt gave one weight_scale_2

Run: scripts/tools-env.sh python tools/quant/make_quantized_checkpoints.py   (from the repo root; CPU; deterministic)
Needs: pip install torch transformers safetensors nvidia-modelopt compressed-tensors requests
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors import safe_open
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5ForCausalLM

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "quant" / "checkpoints"
SEED = 20261202

CONFIG = dict(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
    linear_conv_kernel_dim=4, rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=4096,
    rope_parameters=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                         mrope_section=[2, 1, 1], mrope_interleaved=True),
    bos_token_id=0, eos_token_id=1, pad_token_id=2,
)
# Modules neither library quantizes here: ModelOpt NVFP4_DEFAULT_CFG's exclusions that exist in this model.
IGNORE = ["lm_head", "re:.*linear_attn\\.in_proj_a$", "re:.*linear_attn\\.in_proj_b$"]


def make_model():
    torch.manual_seed(SEED)
    cfg = Qwen3_5TextConfig(**CONFIG)
    cfg._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(cfg).eval()
    with torch.no_grad():  # weights of a trained-model magnitude, different per row so block scales spread
        g = torch.Generator().manual_seed(SEED + 1)
        for name, p in model.named_parameters():
            if p.ndim == 2:
                row = torch.exp(0.5 * torch.randn(p.shape[0], 1, generator=g))
                p.copy_(torch.randn(p.shape, generator=g) * 0.05 * row)
            elif name.endswith("A_log"):
                p.copy_(torch.log(torch.empty(p.shape).uniform_(0.05, 3.0, generator=g)))
    return model.to(torch.bfloat16)


def calib_ids():
    g = np.random.default_rng(SEED + 2)
    return torch.from_numpy(g.integers(3, CONFIG["vocab_size"], size=(2, 48)).astype(np.int64))


def save_bf16(model, out):
    model.save_pretrained(out, safe_serialization=True)


def quantize_modelopt(out, ids):
    import modelopt
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint

    model = Qwen3_5ForCausalLM.from_pretrained(OUT / "bf16", dtype=torch.bfloat16).eval()
    with torch.no_grad():
        mtq.quantize(model, mtq.NVFP4_DEFAULT_CFG, forward_loop=lambda m: m(ids))
        export_hf_checkpoint(model, export_dir=str(out))
    return f"nvidia-modelopt {modelopt.__version__}"


def quantize_compressed_tensors(out, ids):
    import compressed_tensors
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationScheme, QuantizationStatus,
                                                 apply_quantization_config)
    from compressed_tensors.quantization.quant_scheme import NVFP4
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam

    model = Qwen3_5ForCausalLM.from_pretrained(OUT / "bf16", dtype=torch.bfloat16).eval()
    # Calibration first, on the unquantized model (as ModelOpt's max calibration sees full-precision
    # activations): the per-tensor range of every Linear's input (CT's static_minmax observer).
    lo, hi, hooks = {}, {}, []
    for n, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            def hook(mod, args, n=n):
                x = args[0].detach().float()
                lo[n] = torch.minimum(lo.get(n, x.min()), x.min())
                hi[n] = torch.maximum(hi.get(n, x.max()), x.max())
            hooks.append(m.register_forward_pre_hook(hook))
    with torch.no_grad():
        model(ids)
    for h in hooks:
        h.remove()
    qcfg = QuantizationConfig(config_groups={"group_0": QuantizationScheme(targets=["Linear"], **NVFP4)},
                              ignore=IGNORE, quantization_status=QuantizationStatus.INITIALIZED)
    apply_quantization_config(model, qcfg)
    quantized = {n: m for n, m in model.named_modules() if getattr(m, "quantization_scheme", None) is not None}
    with torch.no_grad():
        for n, m in quantized.items():
            # The qparams from the f32 weights: generate_gparam on bf16 weights rounds G = 2688/amax to bf16
            # (e.g. 8448), which alone moves every block scale away from ModelOpt's.
            w = m.weight.float()
            args = m.quantization_scheme.weights
            g = generate_gparam(w.min(), w.max())
            blocks = w.view(w.shape[0], -1, 16)
            scale, zp = calculate_qparams(blocks.amin(-1), blocks.amax(-1), args, global_scale=g)
            m.weight_global_scale.data.copy_(g.to(m.weight_global_scale.dtype).reshape(m.weight_global_scale.shape))
            m.weight_scale.data.copy_(scale.to(m.weight_scale.dtype).reshape(m.weight_scale.shape))
            if hasattr(m, "input_global_scale"):
                gi = generate_gparam(lo[n], hi[n])
                m.input_global_scale.data.copy_(gi.to(m.input_global_scale.dtype).reshape(m.input_global_scale.shape))
            m.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model, quantization_format="nvfp4-pack-quantized")
    compressor.compress_model(model)
    model.save_pretrained(out, safe_serialization=True)
    compressor.update_config(str(out))
    return f"compressed-tensors {compressed_tensors.__version__}"


def tensor_names(d):
    names = {}
    for f in sorted(d.glob("*.safetensors")):
        with safe_open(f, "pt") as st:
            for k in st.keys():
                names[k] = st.get_tensor(k)
    return names


def fused_groups(d):
    """Sets of quantized linears of one layer that ModelOpt gave the same weight_scale_2."""
    t = tensor_names(d)
    by_layer = {}
    for k, v in t.items():
        if k.endswith(".weight_scale_2"):
            mod = k[: -len(".weight_scale_2")]
            layer, _, leaf = mod.rpartition(".")
            parent, _, _ = layer.rpartition(".") if leaf == "" else (layer, "", "")
            by_layer.setdefault(mod.rsplit(".", 2)[0], []).append((mod, float(v.float().reshape(-1)[0])))
    groups = []
    for layer, mods in sorted(by_layer.items()):
        seen = {}
        for mod, s in mods:
            seen.setdefault(s, []).append(mod)
        groups += [sorted(ms) for ms in seen.values() if len(ms) > 1]
    return groups


def ct_vs_modelopt_blocks():
    """Block-by-block comparison of the CT checkpoint with ModelOpt's per-tensor NVFP4QTensor.quantize of the same
    bf16 weights (what ninfer-pack --quant nvfp4 --quant-scale-groups tensor writes, bit for bit). CT computes the
    block scale as fp8(G * (amax_b / 6)) and the codes from x / (fp8 / G); ModelOpt as fp8(amax_b / (6 * S2)) and
    x / (fp8 * S2), so a few blocks land one E4M3 code apart or one E2M1 step apart at a rounding boundary."""
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
    b = tensor_names(OUT / "bf16")
    c = tensor_names(OUT / "compressed_tensors")
    stats = {"blocks": 0, "equal": 0, "scale_equal_codes_differ": 0, "scale_one_code_apart": 0, "scale_0.125_fallback": 0,
             "other": 0}
    for k in sorted(c):
        if not k.endswith(".weight_packed"):
            continue
        m = k[: -len(".weight_packed")]
        q, s, _ = NVFP4QTensor.quantize(b[m + ".weight"].float().clone(), 16)
        mc, ms = q._quantized_data.numpy(), s.view(torch.uint8).numpy().astype(int)
        cc, cs = c[k].numpy(), c[m + ".weight_scale"].view(torch.uint8).numpy().astype(int)
        for r in range(ms.shape[0]):
            for j in range(ms.shape[1]):
                stats["blocks"] += 1
                codes_equal = bool((mc[r, j * 8:j * 8 + 8] == cc[r, j * 8:j * 8 + 8]).all())
                if ms[r, j] == cs[r, j]:
                    stats["equal" if codes_equal else "scale_equal_codes_differ"] += 1
                elif cs[r, j] == 0x20:
                    stats["scale_0.125_fallback"] += 1
                elif abs(ms[r, j] - cs[r, j]) == 1:
                    stats["scale_one_code_apart"] += 1
                else:
                    stats["other"] += 1
    return stats


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    torch.set_num_threads(1)
    model = make_model()
    save_bf16(model, OUT / "bf16")
    ids = calib_ids()
    ids.numpy().astype("<i4").tofile(OUT / "calib_ids.i32")
    index = {"generator": "tools/quant/make_quantized_checkpoints.py", "torch": torch.__version__,
             "transformers": transformers.__version__, "config": CONFIG, "calib_ids_shape": list(ids.shape)}
    index["modelopt"] = quantize_modelopt(OUT / "modelopt", ids)
    index["compressed_tensors"] = quantize_compressed_tensors(OUT / "compressed_tensors", ids)
    for lib, suffix in [("modelopt", ".weight_scale_2"), ("compressed_tensors", ".weight_global_scale")]:
        index[f"{lib}_quantized_modules"] = sorted(k[: -len(suffix)] for k in tensor_names(OUT / lib) if k.endswith(suffix))
    index["modelopt_fused_groups"] = fused_groups(OUT / "modelopt")
    index["compressed_tensors_vs_modelopt_per_tensor_blocks"] = ct_vs_modelopt_blocks()
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file())
    print(f"wrote {OUT} ({total} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
