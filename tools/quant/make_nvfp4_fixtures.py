#!/usr/bin/env python3
"""Writes the NVFP4 reference fixtures under tests/data/quant/ with NVIDIA ModelOpt (PyPI nvidia-modelopt).

Every tensor is quantized by modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize(w, 16)
on the CPU (the pure-PyTorch path: no TensorRT-LLM kernel), which is the function ModelOpt's HF export
uses for NVFP4 weights. Per tensor it writes raw little-endian files:
  <name>.input.f32    the f32 input, row-major [rows, cols]
  <name>.codes.u8     packed E2M1 codes [rows, cols/2] (ModelOpt `weight`)
  <name>.scales.u8    E4M3 block scales [rows, cols/16] (ModelOpt `weight_scale`, raw bytes)
  <name>.dequant.f32  NVFP4QTensor.dequantize(...) in f32
  <name>.ct_codes.u8, <name>.ct_scales.u8  the same from compressed-tensors' NVFP4 preset, when installed
and index.json with the shapes, weight_scale_2 (f32 bits) and file names. It also writes torch's own
E4M3 decode table (all 256 codes), torch float8_e4m3fn casts of probe values, and ModelOpt's _cast_fp4 of
E2M1 probe values (ties and their float neighbours).

Run: scripts/tools-env.sh python tools/quant/make_nvfp4_fixtures.py   (from the repo root; deterministic)
"""
import json
import pathlib
import sys

import numpy as np
import torch

import modelopt
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

try:  # optional cross-check with compressed-tensors (its own convention; see docs/nvfp4.md)
    from compressed_tensors.compressors.nvfp4.helpers import pack_fp4_to_uint8
    from compressed_tensors.quantization.lifecycle.forward import quantize as ct_quantize
    from compressed_tensors.quantization.quant_scheme import NVFP4 as CT_NVFP4
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam
    import compressed_tensors
except ImportError:
    compressed_tensors = None

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "quant"


def f32_bits(x: float) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def compressed_tensors_compare(name, w, codes, scales, scale_2):
    """Quantizes w with compressed-tensors' NVFP4 preset and counts agreement with ModelOpt's result.

    CT stores the global scale G (a divisor, 2688/amax) where ModelOpt stores S2 = amax/2688, computes
    the block scale as fp8(G * (amax_b / 6)) instead of fp8(amax_b / (6 * S2)), replaces a zero FP8 scale
    by 0.125 (ModelOpt: a zero block gets 1.0, and scales are clamped to >= 2^-9 before the cast), and
    quantizes x / (fp8 / G) instead of x / (fp8 * S2).
    """
    x = torch.from_numpy(w.copy())
    g = generate_gparam(x.min(), x.max())
    blocks = x.view(x.shape[0], -1, 16)
    args = CT_NVFP4["weights"]
    ct_scale, zp = calculate_qparams(blocks.amin(-1), blocks.amax(-1), args, global_scale=g)
    ct_codes = pack_fp4_to_uint8(ct_quantize(x, ct_scale, zp, args, global_scale=g)).numpy()
    ct_scales = ct_scale.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    ct_codes.astype(np.uint8).tofile(OUT / f"{name}.ct_codes.u8")
    ct_scales.astype(np.uint8).tofile(OUT / f"{name}.ct_scales.u8")
    eps_blocks = ct_scales == 0x20  # 0.125: CT's replacement for a zero scale (or a genuine 0.125)
    return {"codes_equal": int((ct_codes == codes).sum()), "codes": int(codes.size),
            "scales_equal": int((ct_scales == scales).sum()), "scales": int(scales.size),
            "scales_differing_where_ct_used_0.125": int(((ct_scales != scales) & eps_blocks).sum()),
            "code_bytes_differing_in_blocks_with_equal_scales":
                int(((ct_codes != codes) & np.repeat(ct_scales == scales, 8, axis=1)).sum()),
            "one_over_global_scale_equals_weight_scale_2": bool(np.float32(1.0) / np.float32(float(g[0])) == np.float32(scale_2)),
            "global_scale": float(g[0]), "global_scale_bits": f32_bits(float(g[0]))}


def tensors():
    g = np.random.default_rng(20261202)
    out = {}
    out["random_normal"] = g.standard_normal((8, 64)).astype(np.float32)
    # Rows of different magnitudes, so block scales spread over the E4M3 range.
    out["random_scaled"] = (g.standard_normal((16, 256)) * np.exp(2.0 * g.standard_normal((16, 1)))).astype(np.float32)

    z = g.standard_normal((4, 48)).astype(np.float32)
    z[1, :] = 0.0          # a zero row
    z[2, 16:32] = 0.0      # a zero block
    z[3, 0:16] = -0.0      # a block of negative zeros
    z[0, 5] = -0.0
    out["zero_blocks"] = z
    out["all_zero"] = np.zeros((2, 32), dtype=np.float32)  # degenerate in ModelOpt (NaN scales)

    o = g.standard_normal((8, 64)).astype(np.float32)
    o[3, 17] = 1.0e5       # one huge outlier: every other block gets a tiny (E4M3 subnormal) scale
    out["huge_outlier"] = o
    o2 = (g.standard_normal((4, 32)) * 1e-3).astype(np.float32)
    o2[0, 0] = -3.0e38     # near f32 max
    out["extreme_outlier"] = o2

    # E2M1 ties: amax 2688 makes weight_scale_2 exactly 1; a block whose amax is 6*2^e gets the exact
    # scale 2^e, so w / scale lands exactly on the rounding thresholds.
    ties = [6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -6.0]
    near = [6.0]
    for t in [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]:
        near += [float(np.nextafter(np.float32(t), np.float32(0))), float(np.nextafter(np.float32(t), np.float32(10)))]
    near.append(-0.1)
    t = np.zeros((4, 64), dtype=np.float32)
    t[0, 0:16] = np.array(ties, dtype=np.float32) * 448.0  # holds the tensor amax 2688
    for r, e in enumerate([-3, 0, 2, 5]):
        if r > 0:
            t[r, 0:16] = np.array(ties, dtype=np.float32) * np.float32(2.0 ** e)
        t[r, 16:32] = np.array(near, dtype=np.float32) * np.float32(2.0 ** e)
        t[r, 32:48] = -np.array(ties, dtype=np.float32)[::-1] * np.float32(2.0 ** (e - 4))
        t[r, 48:64] = np.array(ties, dtype=np.float32) * np.float32(2.0 ** (e + 1)) * np.float32(0.5)
    out["e2m1_ties"] = t

    # Small block scales: with weight_scale_2 = 1 (amax 2688) a block of amax 6*s asks for scale s exactly.
    s_values = [k * 2.0 ** -9 for k in range(1, 9)] + [1.5 * 2.0 ** -9, 2.5 * 2.0 ** -9, 0.5 * 2.0 ** -9,
                0.25 * 2.0 ** -9, 0.75 * 2.0 ** -9, 7.5 * 2.0 ** -9, 1.0625, 1.1875, 1e-7, 3e-4, 0.0117, 0.01]
    s = np.zeros((len(s_values) // 2 + 1, 32), dtype=np.float32)
    s[0, 0] = 2688.0
    for i, sv in enumerate(s_values):
        r, b = divmod(i + 1, 2)
        block = g.uniform(-1.0, 1.0, 16).astype(np.float32) * np.float32(6.0 * sv)
        block[int(g.integers(0, 16))] = np.float32(6.0 * sv)
        s[r, b * 16:(b + 1) * 16] = block
    out["subnormal_scales"] = s

    c = np.zeros((6, 32), dtype=np.float32)
    for r, v in enumerate([1.0, -3.3, 0.0, 1e-3, 7.7e5, -2e-6]):
        c[r, :] = v
    out["constant_rows"] = c
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    index = {"generator": "tools/quant/make_nvfp4_fixtures.py", "reference": f"nvidia-modelopt {modelopt.__version__}",
             "torch": torch.__version__, "tensors": []}
    if compressed_tensors is not None:
        index["cross_check"] = f"compressed-tensors {compressed_tensors.__version__} (informational counts only)"
    ts = tensors()
    # A fused group (q/k/v or gate/up): the smaller member quantized with the group's shared weight_scale_2.
    g = np.random.default_rng(99)
    fused_big = (g.standard_normal((8, 32)) * 4.0).astype(np.float32)
    ts["fused_shared_scale"] = (g.standard_normal((4, 32)) * 0.5).astype(np.float32)
    shared = {"fused_shared_scale": NVFP4QTensor.get_weights_scaling_factor_2(
        torch.from_numpy(np.concatenate([fused_big, ts["fused_shared_scale"]])))}
    for name, w in ts.items():
        x = torch.from_numpy(w.copy())
        q, scale, scale_2 = NVFP4QTensor.quantize(x.clone(), 16, weights_scaling_factor_2=shared.get(name))
        codes = q._quantized_data.numpy().astype(np.uint8)
        scales = scale.view(torch.uint8).numpy().astype(np.uint8)
        deq = q.dequantize(dtype=torch.float32, scale=scale, double_scale=scale_2, block_sizes={-1: 16}).numpy()
        assert codes.shape == (w.shape[0], w.shape[1] // 2) and scales.shape == (w.shape[0], w.shape[1] // 16)
        w.astype("<f4").tofile(OUT / f"{name}.input.f32")
        codes.tofile(OUT / f"{name}.codes.u8")
        scales.tofile(OUT / f"{name}.scales.u8")
        deq.astype("<f4").tofile(OUT / f"{name}.dequant.f32")
        s2 = float(scale_2.reshape(-1)[0])
        index["tensors"].append({"name": name, "rows": w.shape[0], "cols": w.shape[1],
                                 "weight_scale_2_bits": f32_bits(s2), "weight_scale_2": s2,
                                 "degenerate": bool(not np.isfinite(deq).all()), "given_weight_scale_2": name in shared})
        if compressed_tensors is not None and name not in shared:
            index["tensors"][-1]["compressed_tensors"] = compressed_tensors_compare(name, w, codes, scales, s2)

    # torch's float8_e4m3fn decode of all 256 codes.
    torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float().numpy().astype("<f4").tofile(
        OUT / "e4m3_decode_table.f32")
    # torch's float32 -> float8_e4m3fn cast (RNE) of probe values: every code value, every midpoint between
    # neighbouring codes and the floats on either side of it, and log-uniform random values in [2^-12, 448].
    pos = np.sort(np.array([v for v in torch.arange(127, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn)
                            .float().numpy()], dtype=np.float32))
    probes = list(pos)
    for a, b in zip(pos[:-1], pos[1:]):
        m = np.float32((np.float64(a) + np.float64(b)) / 2)
        probes += [m, np.nextafter(m, np.float32(0)), np.nextafter(m, np.float32(1000))]
    g = np.random.default_rng(7)
    probes += list(np.exp2(g.uniform(-12, np.log2(448.0), 600)).astype(np.float32))
    probes += [np.float32(2.0 ** -11), np.float32(2.0 ** -10), np.float32(1e-30), np.float32(0)]
    p = np.array(probes, dtype=np.float32)
    p = np.concatenate([p, -p])
    p.astype("<f4").tofile(OUT / "e4m3_probe.input.f32")
    torch.from_numpy(p).to(torch.float8_e4m3fn).view(torch.uint8).numpy().astype(np.uint8).tofile(OUT / "e4m3_probe.codes.u8")
    # ModelOpt's _cast_fp4 of E2M1 probes: the thresholds, their float neighbours, the code values, and random.
    e = [0.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 7.0, 100.0, 1e-8]
    e2 = []
    for v in e:
        f = np.float32(v)
        e2 += [f, np.nextafter(f, np.float32(0)), np.nextafter(f, np.float32(100))]
    e2 += list(g.uniform(-7, 7, 400).astype(np.float32))
    q = np.array(e2, dtype=np.float32)
    q = np.concatenate([q, -q])
    q.astype("<f4").tofile(OUT / "e2m1_probe.input.f32")
    NVFP4QTensor._cast_fp4(torch.from_numpy(q.copy())).numpy().astype(np.uint8).tofile(OUT / "e2m1_probe.codes.u8")
    index["e4m3_probes"] = int(p.size)
    index["e2m1_probes"] = int(q.size)

    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in OUT.iterdir())
    print(f"wrote {len(index['tensors'])} tensors, {p.size} e4m3 and {q.size} e2m1 probes to {OUT} ({total} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
