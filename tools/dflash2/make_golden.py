#!/usr/bin/env python3
"""Golden fixtures for the C++ DFlash2 drafter (tests/dflash2/) from the torch implementation (tools/dflash2/model.py).

Reads the drafter and the target from an artifact (default models/ninfer-tiny.ninfer) with the independent Python
reader, runs the target (transformers) on a fixed text with hidden-state capture, and records:

  tokens.i32        [T]          the text's ids; context = positions 0..T-2, anchor = tokens[T-1] at position T-1
  features.f32      [T-1, n*H]   outputs of target layers target_layer_ids (concatenated) at positions 0..T-2
  full_logits.f32   [B-1, V]     drafter block logits with the target's lm_head (anchor at T-1)
  full_tokens.i32   [B-1]        their argmax
  short_logits.f32  [B-1, V]     the block with context 0..S-1 and anchor tokens[S] at position S (S = short_context)
  draft_logits.f32  [B-1, V']    (when the artifact has draft_lm_head) the anchor-T-1 block scored by draft_lm_head
  draft_tokens.i32  [B-1]        their argmax mapped through draft_lm_head.ids

Values are computed in float64 (the f32 run is compared and reported) and stored as f32. index.json: shapes,
config, the artifact's sha256, top-2 gaps of the argmax rows.

    scripts/tools-env.sh python tools/dflash2/make_golden.py [--artifact models/ninfer-tiny.ninfer] [--out tests/data/dflash2]
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from export import load_drafter_from_artifact  # noqa: E402
from model import target_features  # noqa: E402
from ninfer_artifact import DEFAULT_ARTIFACT, REPO, load_target  # noqa: E402

TEXT = ("def read_config(path):\n    \"\"\"Read a JSON config file and return it as a dict.\"\"\"\n"
        "    with open(path, encoding=\"utf-8\") as f:\n        data = json.load(f)\n    if not isinstance(data, dict):\n"
        "        raise ValueError(\"config must be an object\")\n    return data\n\n\ndef write_config(path, data):\n")
SHORT_CONTEXT = 21


def block_hidden(drafter, embed, ctx, anchor_tok, anchor_pos):
    b = drafter.cfg["block_size"]
    emb = drafter.block_embeds(embed, torch.tensor([anchor_tok]), 1)
    pos = torch.arange(anchor_pos, anchor_pos + b)
    return drafter(ctx[:anchor_pos], emb, pos, torch.full((b,), anchor_pos))[1:]


def top2_gap(x):
    t = x.topk(2, -1).values
    return float((t[..., 0] - t[..., 1]).min())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=DEFAULT_ARTIFACT)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "dflash2"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    art, target = load_target(a.artifact)
    drafter = load_drafter_from_artifact(art)
    tok = art.tokenizer()
    ids = torch.tensor(tok.encode(TEXT, add_special_tokens=False).ids, dtype=torch.long)
    T = ids.numel()
    cfg = drafter.cfg
    os.makedirs(a.out, exist_ok=True)
    files = {}

    def put(name, t, dtype):
        arr = t.detach().numpy().astype(dtype)
        arr.tofile(os.path.join(a.out, name))
        files[name.split(".")[0]] = {"file": name, "dtype": "f32" if dtype == np.float32 else "i32",
                                     "shape": list(arr.shape)}

    with torch.no_grad():
        logits, feats = target_features(target, ids[None], cfg["target_layer_ids"])
        feats = feats[0, :T - 1]
        has_draft = "draft_lm_head.weight" in art.entries
        results = {}
        for dt in (torch.float64, torch.float32):
            d = drafter.to(dt)
            f = feats.to(dt)
            embed = target.model.embed_tokens.weight.detach().to(dt)
            ctx = d.context(f)
            hid = block_hidden(d, embed, ctx, int(ids[T - 1]), T - 1)
            short = block_hidden(d, embed, ctx, int(ids[SHORT_CONTEXT]), SHORT_CONTEXT)
            r = {"full": hid @ embed.T, "short": short @ embed.T}
            if has_draft:
                r["draft"] = hid @ art.tensor("draft_lm_head.weight").to(dt).T
            results[dt] = r
        drafter.float()
    r64, r32 = results[torch.float64], results[torch.float32]
    f32_vs_f64 = {k: float((r32[k].double() - r64[k]).abs().max() / r64[k].abs().max()) for k in r64}
    put("tokens.i32", ids, np.int32)
    put("features.f32", feats, np.float32)
    put("full_logits.f32", r64["full"], np.float32)
    put("full_tokens.i32", r64["full"].argmax(-1), np.int32)
    put("short_logits.f32", r64["short"], np.float32)
    put("short_tokens.i32", r64["short"].argmax(-1), np.int32)
    gaps = {"full": top2_gap(r64["full"]), "short": top2_gap(r64["short"])}
    if has_draft:
        tid = art.tensor("draft_lm_head.ids").long()
        put("draft_logits.f32", r64["draft"], np.float32)
        put("draft_tokens.i32", tid[r64["draft"].argmax(-1)], np.int32)
        gaps["draft"] = top2_gap(r64["draft"])
    with open(a.artifact, "rb") as fh:
        sha = hashlib.sha256(fh.read()).hexdigest()
    index = {"generator": "tools/dflash2/make_golden.py", "torch": torch.__version__,
             "artifact": {"path": os.path.relpath(a.artifact, REPO), "sha256": sha},
             "config": cfg, "context_tokens": T - 1, "anchor_position": T - 1, "short_context": SHORT_CONTEXT,
             "has_draft_head": has_draft, "f32_vs_f64_rel_err": f32_vs_f64, "min_top2_gap": gaps, "files": files}
    with open(os.path.join(a.out, "index.json"), "w") as fh:
        json.dump(index, fh, indent=1)
    print(json.dumps({"T": T, "f32_vs_f64": f32_vs_f64, "gaps": gaps,
                      "full_tokens": r64["full"].argmax(-1).tolist()}))


if __name__ == "__main__":
    main()
