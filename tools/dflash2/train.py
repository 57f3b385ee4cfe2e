#!/usr/bin/env python3
"""Train the DFlash2 block drafter for ninfer-tiny on the target's own hidden states (one CPU thread by default).

The target (models/ninfer-tiny.ninfer, rebuilt in transformers by ninfer_artifact.py) is frozen. Every step it runs on
R windows of W tokens of the training corpus (tools/train_tiny/build_corpus.py) and gives (a) the outputs of the
decoder layers in target_layer_ids (the drafter's context features) and (b) its next-token distributions (the
teacher). For A random anchors a per window the drafter sees the block [x_a, MASK x (B-1)] at positions a..a+B-1 and
context c_0..c_{a-1}; block row j (1..B-1) is trained to the target's choice for the token at a+j: cross-entropy
against the argmax of the target's logits at a+j-1 (--loss hard, the default: greedy verification accepts exactly
that) or soft cross-entropy against their softmax (--loss soft), weighted exp(-(j-1)/gamma). The learning rate
follows a cosine over whichever budget runs out first, --steps or --max-minutes. Output: drafter.pt (state dict +
config), log.jsonl.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from model import DFlash2Drafter, target_features  # noqa: E402
from ninfer_artifact import DEFAULT_ARTIFACT, REPO, load_target  # noqa: E402

MASK_TOKEN = "<|fim_pad|>"


def drafter_config(target_cfg, args, mask_id):
    return {
        "hidden_size": target_cfg["hidden_size"],
        "num_layers": args.layers,
        "num_heads": 4,
        "num_kv_heads": 2,
        "head_dim": 64,
        "intermediate_size": target_cfg["intermediate_size"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 1e6,
        "block_size": args.block,
        "target_layer_ids": [int(x) for x in args.target_layers.split(",")],
        "mask_token_id": mask_id,
    }


def tokenize(tok, path, cache, limit_docs):
    if os.path.exists(cache):
        d = np.load(cache)
        return d["ids"], d["starts"]
    eot = tok.token_to_id("<|endoftext|>")
    with open(path, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f][:limit_docs]
    ids, starts, n = [], [], 0
    for i in range(0, len(texts), 256):
        for enc in tok.encode_batch(texts[i:i + 256], add_special_tokens=False):
            starts.append(n)
            ids.extend(enc.ids)
            ids.append(eot)
            n += len(enc.ids) + 1
    ids, starts = np.asarray(ids, dtype=np.int32), np.asarray(starts, dtype=np.int64)
    np.savez(cache, ids=ids, starts=starts)
    return ids, starts


def sample_windows(rng, ids, starts, rows, width):
    out = []
    for r in range(rows):
        if r % 2 == 0:
            s = int(starts[rng.integers(0, len(starts))])
        else:
            s = int(rng.integers(0, len(ids) - width))
        s = min(s, len(ids) - width)
        out.append(ids[s:s + width])
    return torch.from_numpy(np.stack(out).astype(np.int64))


def block_loss(drafter, embed, feats, teacher_logits, ids, anchors, gamma, hard=True):
    """One window: feats [W, nH], teacher_logits [W, V], ids [W], anchors [A] -> (loss, agree [B-1], count).
    hard: cross-entropy against the target's argmax (what greedy verification accepts); else soft cross-entropy
    against the target's distribution."""
    b = drafter.cfg["block_size"]
    ctx = drafter.context(feats)
    n_blocks = anchors.numel()
    emb = drafter.block_embeds(embed, ids[anchors], n_blocks)
    offs = torch.arange(b)
    pos = (anchors[:, None] + offs[None, :]).reshape(-1)
    anc = anchors[:, None].expand(-1, b).reshape(-1)
    hid = drafter(ctx, emb, pos, anc).view(n_blocks, b, -1)[:, 1:]
    logits = hid @ embed.T  # [A, B-1, V], the target's tied lm_head
    teach = teacher_logits[(anchors[:, None] + offs[None, 1:] - 1)]  # [A, B-1, V]
    if hard:
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), teach.argmax(-1).reshape(-1),
                             reduction="none").view(n_blocks, b - 1)
    else:
        ce = -(teach.softmax(-1) * logits.log_softmax(-1)).sum(-1)  # [A, B-1]
    w = torch.exp(-(torch.arange(b - 1, dtype=torch.float32)) / gamma)
    loss = (ce * w).sum() / (w.sum() * n_blocks)
    agree = (logits.argmax(-1) == teach.argmax(-1)).float().sum(0)
    return loss, agree, n_blocks


def evaluate(drafter, target, embed, windows, layer_ids, anchors_per, gamma, seed, hard):
    g = torch.Generator().manual_seed(seed)
    b = drafter.cfg["block_size"]
    tot, agree, n = 0.0, torch.zeros(b - 1), 0
    with torch.no_grad():
        for w in windows:
            lg, ft = target_features(target, w[None], layer_ids)
            anchors = torch.randperm(w.numel() - b, generator=g)[:anchors_per].sort().values + 1
            loss, ag, nb = block_loss(drafter, embed, ft[0], lg[0], w, anchors, gamma, hard)
            tot += loss.item() * nb
            agree += ag
            n += nb
    # Probability that rows 1..j all agree is not this; this is the per-position top-1 agreement with the target.
    return tot / n, (agree / n).tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=DEFAULT_ARTIFACT)
    ap.add_argument("--corpus", default=os.path.join(REPO, "build-dflash2", "work", "corpus"))
    ap.add_argument("--out", default=os.path.join(REPO, "build-dflash2", "work", "run"))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--block", type=int, default=8, help="anchor + draft tokens")
    ap.add_argument("--target-layers", default="1,3,5")
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--anchors", type=int, default=64)
    ap.add_argument("--gamma", type=float, default=4.0)
    ap.add_argument("--loss", choices=["hard", "soft"], default="hard")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--max-minutes", type=float, default=28.0)
    ap.add_argument("--train-docs", type=int, default=4000)
    ap.add_argument("--eval-every", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--init-from", help="a drafter.pt to continue from (same config; fresh optimiser and schedule)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    art, target = load_target(args.artifact)
    for p in target.parameters():
        p.requires_grad_(False)
    tok = art.tokenizer()
    mask_id = tok.token_to_id(MASK_TOKEN)
    cfg = drafter_config(art.config, args, mask_id)
    layer_ids = cfg["target_layer_ids"]
    hard = args.loss == "hard"
    embed = target.model.embed_tokens.weight.detach()

    ids, starts = tokenize(tok, os.path.join(args.corpus, "train.jsonl"), os.path.join(args.out, "train_ids.npz"),
                           args.train_docs)
    hids, hstarts = tokenize(tok, os.path.join(args.corpus, "heldout.jsonl"),
                             os.path.join(args.out, "heldout_ids.npz"), 10 ** 9)
    print(f"train tokens {len(ids)} ({len(starts)} docs), held-out {len(hids)}", flush=True)
    eval_windows = [torch.from_numpy(hids[int(s):int(s) + args.width].astype(np.int64))
                    for s in np.linspace(0, len(hids) - args.width - 1, 6)]

    drafter = DFlash2Drafter(cfg)
    g = torch.Generator().manual_seed(args.seed)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02, generator=g)
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    p.mul_(1.0 / math.sqrt(2 * cfg["num_layers"]))
        # The mask rows start empty (all they carry comes through attention) and the logits start near uniform: with
        # embed[mask_id] and the target's output scale the untrained block predicts its own input token with huge
        # logits, and the first steps collapse it to a constant (unigram) output it leaves only slowly.
        drafter.mask_embedding.zero_()
        drafter.norm.weight.fill_(0.1)
    if args.init_from:  # continue a run: its weights (and config) instead of the init above
        ck = torch.load(args.init_from, map_location="cpu")
        if ck["config"] != cfg:
            raise SystemExit(f"{args.init_from}: config {ck['config']} differs from {cfg}")
        drafter.load_state_dict(ck["state"])
        print(f"continuing from {args.init_from} (step {ck['step']})", flush=True)
    n_params = sum(p.numel() for p in drafter.parameters())
    print(f"drafter {n_params} parameters, config {json.dumps(cfg)}", flush=True)

    decay = [p for n, p in drafter.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in drafter.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    rng = np.random.default_rng(args.seed)
    log = open(os.path.join(args.out, "log.jsonl"), "w")
    t0 = time.time()
    step = 0

    def save(tag):
        torch.save({"config": cfg, "state": drafter.state_dict(), "step": step, "args": vars(args)},
                   os.path.join(args.out, "drafter.pt"))

    while step < args.steps:
        minutes = (time.time() - t0) / 60
        if minutes > args.max_minutes:
            print(f"time limit at step {step}", flush=True)
            break
        if step % args.eval_every == 0:
            ev_loss, ev_agree = evaluate(drafter, target, embed, eval_windows, layer_ids, 64, args.gamma, 7, hard)
            rec = {"step": step, "minutes": round(minutes, 2), "eval_loss": ev_loss,
                   "eval_agree": [round(a, 4) for a in ev_agree]}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            save("eval")
        # Cosine decay over whichever runs out first, the step budget or the time budget (the shared CPU's speed
        # varies; log.jsonl records the steps reached).
        frac = min(1.0, max(step / args.steps, minutes / args.max_minutes))
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        batch = sample_windows(rng, ids, starts, args.rows, args.width)
        with torch.no_grad():
            lg, ft = target_features(target, batch, layer_ids)
        loss_sum = 0.0
        opt.zero_grad()
        for r in range(args.rows):
            anchors = torch.from_numpy(np.sort(rng.choice(args.width - args.block, args.anchors, replace=False)) + 1)
            loss, _, _ = block_loss(drafter, embed, ft[r], lg[r], batch[r], anchors, args.gamma, hard)
            (loss / args.rows).backward()
            loss_sum += loss.item() / args.rows
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            rec = {"step": step, "minutes": round((time.time() - t0) / 60, 2), "loss": round(loss_sum, 4), "lr": lr}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
        step += 1
    ev_loss, ev_agree = evaluate(drafter, target, embed, eval_windows, layer_ids, 64, args.gamma, 7, hard)
    rec = {"step": step, "minutes": round((time.time() - t0) / 60, 2), "eval_loss": ev_loss,
           "eval_agree": [round(a, 4) for a in ev_agree], "final": True}
    print(json.dumps(rec), flush=True)
    log.write(json.dumps(rec) + "\n")
    save("final")


if __name__ == "__main__":
    main()
