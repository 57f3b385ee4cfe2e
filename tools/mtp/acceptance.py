#!/usr/bin/env python3
"""Greedy MTP acceptance on the default model, in torch (independent of the C++ engine): which hidden state is right?

For each sample prompt of the model card (tools/train_tiny/report.py's PROMPTS, rendered with the official template),
transformers' target (rebuilt from the artifact, tools/dflash2/ninfer_artifact.py) decodes greedily; then the
speculative loop is replayed along that text for K = 1..4: at every step the MTP head (tools/train_tiny/model.py)
drafts K tokens by recursion after the newest committed token, the longest prefix equal to the greedy text is
accepted, and the target's own token follows (greedy verification is exact, so the text is the same for every
drafter). Variants:

  post / after   target hidden after the final norm, recursion on the MTP output after mtp.norm (vLLM, the default)
  pre  / after   target hidden BEFORE the final norm (the residual after the last layer)
  post / before  recursion on the MTP layer's output before mtp.norm
  post / after / draft head   drafts scored by draft_lm_head (argmax over its rows)

Prints a markdown table (acceptance rate = accepted / drafted, mean acceptance length = 1 + accepted / steps).

    scripts/tools-env.sh python tools/mtp/acceptance.py [--new-tokens 96]      # CPU, ~2 min
"""
import argparse
import os
import sys

import numpy as np
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "mtp"))
sys.path.insert(0, os.path.join(REPO, "tools", "train_tiny"))
from build_corpus import load_template, make_renderer  # noqa: E402
from make_fixture import PreNorm, load  # noqa: E402
from report import PROMPTS  # noqa: E402

STOP = [8161, 8159]
VARIANTS = [("post", "after", False), ("pre", "after", False), ("post", "before", False), ("post", "after", True)]


@torch.no_grad()
def drafts_at(lm, mtp, mtp_pre, seq, hidden, length, k, after_norm, head, head_ids):
    """k greedy MTP drafts after the first `length` committed tokens of seq (rows 0..length-2 committed)."""
    toks = list(seq[1:length].tolist())
    hid = [hidden[p] for p in range(length - 1)]
    out = []
    for _ in range(k):
        e = lm.model.embed_tokens(torch.tensor([toks]))
        r = mtp(e, torch.stack(hid)[None], lm.model.rotary_emb)
        last = r[0, -1]
        best = int((last @ head.T).argmax())
        d = best if head_ids is None else int(head_ids[best])
        out.append(d)
        hid.append(last if after_norm else mtp_pre.value[0, -1])
        toks.append(d)
    return out


def replay(chain, seq, n_prompt, k):
    """The speculative loop along seq: returns (steps, drafted, accepted, accepted per position)."""
    pos, steps, drafted, accepted = n_prompt + 1, 0, 0, 0  # the prefill commits the first output token
    per = [0] * k
    while pos + k <= len(seq):
        d = chain(pos)[:k]
        a = 0
        while a < k and d[a] == int(seq[pos + a]):
            per[a] += 1
            a += 1
        steps, drafted, accepted = steps + 1, drafted + k, accepted + a
        pos += a + 1
    return steps, drafted, accepted, per


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifact", default=os.path.join(REPO, "models", "ninfer-tiny.ninfer"))
    ap.add_argument("--new-tokens", type=int, default=96)
    ap.add_argument("--max-k", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    art, lm, mtp = load(a.artifact)
    mtp_pre, target_pre = PreNorm(mtp.norm), PreNorm(lm.model.norm)
    tok = art.tokenizer()
    render = make_renderer(load_template())
    draft_w = art.tensor("draft_lm_head.weight").float()
    draft_ids = art.tensor("draft_lm_head.ids").numpy()
    texts = []
    for p in PROMPTS:
        ids = tok.encode(render([{"role": "user", "content": p}], add_generation_prompt=True),
                         add_special_tokens=False).ids
        prompt = torch.tensor([ids])
        out = lm.generate(prompt, max_new_tokens=a.new_tokens, do_sample=False, eos_token_id=STOP, pad_token_id=STOP[1])
        texts.append((out[0], len(ids)))
    rows = []
    for hidden_kind, recursion, draft_head in VARIANTS:
        totals = {k: [0, 0, 0, [0] * k] for k in range(1, a.max_k + 1)}
        for seq, n_prompt in texts:
            with torch.no_grad():
                post = lm.model(input_ids=seq[None], use_cache=False).last_hidden_state[0]
            hidden = post if hidden_kind == "post" else target_pre.value[0]
            cache = {}

            def chain(length):
                if length not in cache:
                    cache[length] = drafts_at(lm, mtp, mtp_pre, seq, hidden, length, a.max_k, recursion == "after",
                                              draft_w if draft_head else lm.lm_head.weight,
                                              draft_ids if draft_head else None)
                return cache[length]

            for k in totals:
                s, d, acc, per = replay(chain, seq, n_prompt, k)
                t = totals[k]
                t[0], t[1], t[2] = t[0] + s, t[1] + d, t[2] + acc
                t[3] = [x + y for x, y in zip(t[3], per)]
        for k, (s, d, acc, per) in totals.items():
            rows.append((hidden_kind, recursion, "draft_lm_head" if draft_head else "lm_head", k, s, d, acc, per))
            print(f"{hidden_kind}/{recursion}/{'draft' if draft_head else 'full'} K={k}: {acc}/{d} accepted "
                  f"({acc / max(d, 1):.3f}), mean acceptance length {1 + acc / max(s, 1):.3f}", flush=True)
    print("\n| target hidden | recursion | head | K | steps | drafted | accepted | acceptance rate | mean acceptance "
          "length | accepted by position |\n|---|---|---|---|---|---|---|---|---|---|")
    for h, r, head, k, s, d, acc, per in rows:
        print(f"| {h}-final-norm | {r} mtp.norm | {head} | {k} | {s} | {d} | {acc} | {acc / max(d, 1):.3f} | "
              f"{1 + acc / max(s, 1):.3f} | {per} |")


if __name__ == "__main__":
    main()
