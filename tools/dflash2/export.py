#!/usr/bin/env python3
"""Export a trained drafter (train.py's drafter.pt) as safetensors with the artifact's dflash2.* names.

Writes the matrices as bf16 (default; --dtype f32 keeps them f32), the vectors (norms, mask embedding) as f32, plus
`dflash2.config`, the f32 vector the C++ loader reads (engine/speculative/dflash2_config.h,
docs/dflash2.md): [format_version=1, hidden_size, num_layers, num_heads, num_kv_heads, head_dim, intermediate_size,
block_size, mask_token_id, rope_theta, rms_norm_eps, num_target_layers, target_layer_ids...]. The same config goes
into the safetensors __metadata__ as JSON (for people; the engine reads only the tensor).

    scripts/tools-env.sh python tools/dflash2/export.py build-dflash2/work/run/drafter.pt -o build-dflash2/work/dflash2.safetensors
    ninfer-pack --from models/ninfer-tiny.ninfer --add-safetensors build-dflash2/work/dflash2.safetensors ...
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(__file__))
from model import DFlash2Drafter  # noqa: E402

CONFIG_VERSION = 1


def config_vector(cfg) -> torch.Tensor:
    v = [CONFIG_VERSION, cfg["hidden_size"], cfg["num_layers"], cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"],
         cfg["intermediate_size"], cfg["block_size"], cfg["mask_token_id"], cfg["rope_theta"], cfg["rms_norm_eps"],
         len(cfg["target_layer_ids"]), *cfg["target_layer_ids"]]
    t = torch.tensor(v, dtype=torch.float32)
    for i, x in enumerate(v):
        if i not in (9, 10) and float(t[i]) != float(x):
            raise ValueError(f"config field {i} = {x} is not exact in f32")
    return t


def config_from_vector(v) -> dict:
    v = [float(x) for x in v]
    if int(v[0]) != CONFIG_VERSION:
        raise ValueError(f"dflash2.config version {v[0]}")
    n = int(v[11])
    return {"hidden_size": int(v[1]), "num_layers": int(v[2]), "num_heads": int(v[3]), "num_kv_heads": int(v[4]),
            "head_dim": int(v[5]), "intermediate_size": int(v[6]), "block_size": int(v[7]),
            "mask_token_id": int(v[8]), "rope_theta": v[9], "rms_norm_eps": v[10],
            "target_layer_ids": [int(x) for x in v[12:12 + n]]}


def load_drafter_from_artifact(art) -> DFlash2Drafter:
    """The drafter held in an artifact's dflash2 section (ninfer_artifact.Artifact)."""
    cfg = config_from_vector(art.tensor("dflash2.config").tolist())
    d = DFlash2Drafter(cfg).eval()
    want = d.state_dict_for_export()
    state = {}
    internal = dict(zip(want.keys(), d.state_dict().keys()))
    for name in want:
        state[internal[name]] = art.tensor(name).float()
    d.load_state_dict(state, strict=True)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16", help="dtype of the 2-D weights")
    a = ap.parse_args()
    ck = torch.load(a.checkpoint, map_location="cpu")
    d = DFlash2Drafter(ck["config"])
    d.load_state_dict(ck["state"])
    tensors = d.state_dict_for_export()
    if a.dtype == "bf16":
        tensors = {n: (t.to(torch.bfloat16) if t.dim() == 2 else t).contiguous() for n, t in tensors.items()}
    tensors["dflash2.config"] = config_vector(ck["config"])
    save_file(tensors, a.out, metadata={"dflash2_config": json.dumps(ck["config"]), "step": str(ck["step"])})
    print(f"{a.out}: {len(tensors)} tensors, {sum(t.numel() for t in tensors.values())} values")


if __name__ == "__main__":
    main()
