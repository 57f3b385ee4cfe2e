#!/usr/bin/env python3
"""Greedy block-of-(B-1) acceptance of the DFlash2 drafter along the target's own greedy text (torch).

For each held-out prompt (N held-out windows of P tokens, tools/train_tiny/build_corpus.py's held-out split) the
target generates G greedy tokens. Speculative decoding with greedy verification is then replayed exactly: after the
prompt the anchor is the target's first token; each cycle the drafter proposes B-1 tokens from the context of all
committed positions before the anchor; a = the longest prefix equal to the target's greedy tokens; a + 1 tokens are
committed (the accepted drafts + the target's bonus/correction token, the next anchor). Reports the mean tokens per
cycle (tau = a + 1) and the per-draft acceptance a / (B-1).

    scripts/tools-env.sh python tools/dflash2/eval_acceptance.py --checkpoint build-dflash2/work/run/drafter.pt
    scripts/tools-env.sh python tools/dflash2/eval_acceptance.py --artifact models/ninfer-tiny.ninfer [--draft-head]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from export import load_drafter_from_artifact  # noqa: E402
from model import DFlash2Drafter, target_features  # noqa: E402
from ninfer_artifact import DEFAULT_ARTIFACT, REPO, load_target  # noqa: E402


def greedy(target, prompt, n):
    ids = prompt.clone()
    with torch.no_grad():
        out = target(input_ids=ids[None], use_cache=True)
        cache = out.past_key_values
        nxt = out.logits[0, -1].argmax()
        gen = [int(nxt)]
        for _ in range(n - 1):
            out = target(input_ids=nxt.view(1, 1), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            nxt = out.logits[0, -1].argmax()
            gen.append(int(nxt))
    return torch.tensor(gen, dtype=torch.long)


def draft_block(drafter, embed, head_w, head_ids, ctx, anchor_tok, anchor_pos):
    b = drafter.cfg["block_size"]
    emb = drafter.block_embeds(embed, torch.tensor([anchor_tok]), 1)
    pos = torch.arange(anchor_pos, anchor_pos + b)
    hid = drafter(ctx[:anchor_pos], emb, pos, torch.full((b,), anchor_pos))[1:]
    best = (hid @ head_w.T).argmax(-1)
    return head_ids[best] if head_ids is not None else best


def replay(drafter, embed, head_w, head_ids, feats, seq, p):
    """seq = prompt (p tokens) + greedy continuation; feats [len, nH]. Returns list of accepted counts a."""
    d = drafter.cfg["block_size"] - 1
    ctx = drafter.context(feats)
    accepted = []
    anchor = p  # position of the anchor (the target's first generated token)
    while anchor + d < seq.numel():
        prop = draft_block(drafter, embed, head_w, head_ids, ctx, int(seq[anchor]), anchor)
        want = seq[anchor + 1:anchor + 1 + d]
        a = 0
        while a < d and int(prop[a]) == int(want[a]):
            a += 1
        accepted.append(a)
        anchor += a + 1
    return accepted


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=DEFAULT_ARTIFACT, help="target (and the drafter, without --checkpoint)")
    ap.add_argument("--checkpoint", help="train.py's drafter.pt instead of the artifact's dflash2 section")
    ap.add_argument("--draft-head", action="store_true", help="score with the artifact's draft_lm_head")
    ap.add_argument("--corpus", default=os.path.join(REPO, "build-dflash2", "work", "corpus"))
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--prompt-tokens", type=int, default=96)
    ap.add_argument("--gen", type=int, default=96)
    ap.add_argument("--json", help="write the result here")
    a = ap.parse_args()
    torch.set_num_threads(1)
    art, target = load_target(a.artifact)
    if a.checkpoint:
        ck = torch.load(a.checkpoint, map_location="cpu")
        drafter = DFlash2Drafter(ck["config"]).eval()
        drafter.load_state_dict(ck["state"])
    else:
        drafter = load_drafter_from_artifact(art)
    embed = target.model.embed_tokens.weight.detach()
    head_w, head_ids = embed, None
    if a.draft_head:
        head_w = art.tensor("draft_lm_head.weight").float()
        head_ids = art.tensor("draft_lm_head.ids").long()
    tok = art.tokenizer()
    with open(os.path.join(a.corpus, "heldout.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    rng = np.random.default_rng(99)
    prompts = []
    for i in rng.permutation(len(docs)):
        ids = tok.encode(docs[i], add_special_tokens=False).ids
        if len(ids) >= a.prompt_tokens:
            prompts.append(torch.tensor(ids[:a.prompt_tokens], dtype=torch.long))
        if len(prompts) == a.prompts:
            break
    all_acc = []
    with torch.no_grad():
        for k, prompt in enumerate(prompts):
            seq = torch.cat([prompt, greedy(target, prompt, a.gen)])
            _, feats = target_features(target, seq[None], drafter.cfg["target_layer_ids"])
            acc = replay(drafter, embed, head_w, head_ids, feats[0], seq, prompt.numel())
            all_acc += acc
            print(f"prompt {k}: {len(acc)} cycles, tau {np.mean(acc) + 1:.3f}", flush=True)
    d = drafter.cfg["block_size"] - 1
    acc = np.array(all_acc)
    res = {"cycles": int(acc.size), "tau_mean_tokens_per_cycle": float(acc.mean() + 1),
           "draft_acceptance": float(acc.mean() / d),
           "first_token_acceptance": float((acc >= 1).mean()),
           "histogram_a": [int((acc == i).sum()) for i in range(d + 1)],
           "prompts": len(prompts), "prompt_tokens": a.prompt_tokens, "gen": a.gen,
           "head": "draft_lm_head" if a.draft_head else "target lm_head"}
    print(json.dumps(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
