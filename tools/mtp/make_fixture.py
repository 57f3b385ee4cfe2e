#!/usr/bin/env python3
"""Fixtures for the MTP drafter tests (tests/data/mtp/), from transformers + the torch MTP head, never from our C++.

The target is transformers' Qwen3_5ForCausalLM rebuilt from models/ninfer-tiny.ninfer (tools/dflash2/ninfer_artifact.py
reads the artifact in Python), the MTP head is tools/train_tiny/model.py's Qwen3_5MTP with the artifact's mtp section.
Prompt 0 of tests/data/ninfer_tiny followed by its first greedy token g0 (n = 29 tokens x_0..x_28):

  prompt0_hidden_post.f32   [28, H]  target hidden after the final norm at positions 0..27 (what lm_head reads)
  prompt0_hidden_pre.f32    [28, H]  the same rows before the final norm (output of the last decoder layer)
  chain_after_norm_tokens.i32 [K]    greedy MTP drafts after x_28 = g0: draft 1 = argmax lm_head(mtp(h_27, g0)) at
                                     position 27; draft j ≥ 2 from (the MTP output of draft j−1 AFTER mtp.norm, draft
                                     j−1) at position 26 + j, attending over every earlier MTP row (one causal pass)
  chain_after_norm_logits.f32 [K, V] the scores behind each draft
  chain_before_norm_{tokens.i32,logits.f32}  the same with the MTP layer's output BEFORE mtp.norm fed back
  draft_head_chain_tokens.i32 [K]    the after-norm chain scored by draft_lm_head (argmax over its rows → its ids)

Row p of tests/data/ninfer_tiny/prompt0_mtp_logits.f32 = MTP(h_p, x_{p+1}) is the golden for the single-step head.
index.json records shapes, the artifact's sha256 and the smallest top-2 gap of every chain row.

    scripts/tools-env.sh python tools/mtp/make_fixture.py        # CPU, ~5 s, deterministic
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "dflash2"))
sys.path.insert(0, os.path.join(REPO, "tools", "train_tiny"))
from ninfer_artifact import load_target  # noqa: E402
from model import Qwen3_5MTP  # noqa: E402

K = 8


def load(path):
    art, lm = load_target(path)
    mtp = Qwen3_5MTP(lm.config)
    mtp.load_state_dict({n[4:]: art.tensor(n).float() for n in art.names("mtp")}, strict=True)
    return art, lm, mtp.eval()


class PreNorm:
    """Captures the input of a norm module (the hidden state before it)."""

    def __init__(self, module):
        self.value = None
        module.register_forward_hook(self._hook)

    def _hook(self, module, inputs, output):
        self.value = inputs[0].detach().clone()


@torch.no_grad()
def chain(lm, mtp, mtp_pre, ids, h, k, after_norm, head=None, head_ids=None):
    """Drafts k tokens after ids[-1] by recursion, recomputing the MTP rows causally each time."""
    e_tokens = list(ids[1:].tolist())   # x_{p+1} of every committed row p = 0..n-2
    hidden = [h[0, p] for p in range(h.shape[1])]
    tokens, logits = [], []
    for _ in range(k):
        e = lm.model.embed_tokens(torch.tensor([e_tokens]))
        out = mtp(e, torch.stack(hidden)[None], lm.model.rotary_emb)
        last = out[0, -1]
        w = lm.lm_head.weight if head is None else head
        row = last @ w.T
        best = int(row.argmax())
        tok = best if head_ids is None else int(head_ids[best])
        tokens.append(tok)
        logits.append(row.numpy().astype(np.float32))
        hidden.append(last if after_norm else mtp_pre.value[0, -1])
        e_tokens.append(tok)
    return np.array(tokens, dtype=np.int32), np.stack(logits)


def top2_gap(rows):
    s = np.sort(rows, axis=-1)
    return float((s[:, -1] - s[:, -2]).min())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=os.path.join(REPO, "models", "ninfer-tiny.ninfer"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "mtp"))
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    art, lm, mtp = load(a.artifact)
    mtp_pre = PreNorm(mtp.norm)
    target_pre = PreNorm(lm.model.norm)
    tiny = os.path.join(REPO, "tests", "data", "ninfer_tiny")
    prompt = np.fromfile(os.path.join(tiny, "prompt0_tokens.i32"), dtype=np.int32)
    g0 = int(np.fromfile(os.path.join(tiny, "greedy0_tokens.i32"), dtype=np.int32)[0])
    ids = torch.tensor(np.concatenate([prompt, [g0]]).astype(np.int64))
    os.makedirs(a.out, exist_ok=True)
    index = {"generator": "tools/mtp/make_fixture.py", "torch": torch.__version__,
             "artifact": {"path": os.path.relpath(a.artifact, REPO)}, "prompt": "tests/data/ninfer_tiny prompt0",
             "g0": g0, "k": K, "files": {}}
    with open(a.artifact, "rb") as f:
        index["artifact"]["sha256"] = hashlib.sha256(f.read()).hexdigest()

    def put(name, arr, **extra):
        arr.tofile(os.path.join(a.out, name))
        index["files"][name] = {"dtype": str(arr.dtype), "shape": list(arr.shape), **extra}

    with torch.no_grad():
        h = lm.model(input_ids=torch.tensor(prompt.astype(np.int64))[None], use_cache=False).last_hidden_state
        want = np.fromfile(os.path.join(tiny, "prompt0_logits.f32"), dtype=np.float32).reshape(len(prompt), -1)
        got = lm.lm_head(h)[0].numpy()
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        if rel > 1e-5:
            raise SystemExit(f"the rebuilt target disagrees with prompt0_logits.f32 (rel {rel:.3e})")
        put("prompt0_hidden_post.f32", h[0].numpy().astype(np.float32))
        put("prompt0_hidden_pre.f32", target_pre.value[0].numpy().astype(np.float32))
        for name, after in (("after_norm", True), ("before_norm", False)):
            toks, logits = chain(lm, mtp, mtp_pre, ids, h, K, after)
            put(f"chain_{name}_tokens.i32", toks)
            put(f"chain_{name}_logits.f32", logits, min_top2_gap=top2_gap(logits))
            print(f"chain {name}: {toks.tolist()} (min top-2 gap {top2_gap(logits):.4f})")
        head_ids = art.tensor("draft_lm_head.ids").numpy()
        toks, logits = chain(lm, mtp, mtp_pre, ids, h, K, True, art.tensor("draft_lm_head.weight").float(), head_ids)
        put("draft_head_chain_tokens.i32", toks, min_top2_gap=top2_gap(logits))
        print(f"draft-head chain: {toks.tolist()} (min top-2 gap {top2_gap(logits):.4f})")
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
