#!/usr/bin/env python3
"""Write tests/data/accuracy/metrics.json: golden values for bench/accuracy/logit_metrics (ninfer-bench-accuracy).

Independent implementation in torch (float64): for each pair of logit rows (reference, variant) and a target id,
  kl       = torch.nn.functional.kl_div(log_softmax(variant), log_softmax(reference), log_target=True, reduction="sum")
             = KL(p_ref || p_variant) in nats,
  top1     = torch.argmax(reference) == torch.argmax(variant)   (first index of the maximum),
  nll_*    = -log_softmax(x)[target];
and over all pairs the summary: mean KL, numpy.percentile(kl, 50 / 95 / 99) (linear), max, agreement fraction,
perplexities exp(mean nll), top-1 accuracies against the targets, and over the pairs whose top-1 differs the
reference's top-1 − top-2 probability gap (median, max).

  scripts/tools-env.sh python tools/accuracy/make_metric_fixture.py
"""
import json
import os

import numpy as np
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "data", "accuracy", "metrics.json")


def pairs():
    g = torch.Generator().manual_seed(20261203)
    out = []
    # Hand-checkable: identical rows, a constant shift (same distribution), a tie broken by the lowest index.
    out.append(("identical", [1.0, 2.0, 3.0, 0.5], [1.0, 2.0, 3.0, 0.5], 2))
    out.append(("shifted", [0.0, -1.0, 4.0], [10.0, 9.0, 14.0], 0))
    out.append(("tie", [2.0, 2.0, 1.0], [1.0, 3.0, 3.0], 1))
    out.append(("two_way", [0.0, 0.0], [0.0, float(np.log(3.0))], 1))  # by hand: KL(½,½ || ¼,¾) = ½·log(4/3)
    for i, (vocab, scale, noise) in enumerate([(8, 1.0, 0.1), (16, 3.0, 0.5), (64, 5.0, 0.05), (33, 10.0, 2.0),
                                               (128, 2.0, 0.01), (7, 20.0, 1.0)]):
        a = torch.randn(vocab, generator=g, dtype=torch.float64) * scale
        b = a + torch.randn(vocab, generator=g, dtype=torch.float64) * noise
        t = int(torch.randint(0, vocab, (1,), generator=g))
        out.append((f"random{i}", a.tolist(), b.tolist(), t))
    return out


def main():
    rows, kls, flip_margins = [], [], []
    agree = 0
    nll_r = nll_v = 0.0
    acc_r = acc_v = 0
    for name, ref, var, target in pairs():
        r = torch.tensor(ref, dtype=torch.float32).double()  # the bench's logits are f32: golden inputs are too
        v = torch.tensor(var, dtype=torch.float32).double()
        ref, var = r.tolist(), v.tolist()
        lr, lv = torch.log_softmax(r, 0), torch.log_softmax(v, 0)
        kl = float(torch.nn.functional.kl_div(lv, lr, log_target=True, reduction="sum"))
        ar, av = int(torch.argmax(r)), int(torch.argmax(v))
        top2 = torch.topk(torch.softmax(r, 0), 2).values
        margin = float(top2[0] - top2[1])
        rows.append({"name": name, "ref": ref, "variant": var, "target": target, "kl": kl, "top1_agree": ar == av,
                     "argmax_ref": ar, "argmax_variant": av, "margin_ref": margin, "nll_ref": float(-lr[target]),
                     "nll_variant": float(-lv[target])})
        kls.append(kl)
        if ar != av:
            flip_margins.append(margin)
        agree += ar == av
        nll_r += float(-lr[target])
        nll_v += float(-lv[target])
        acc_r += ar == target
        acc_v += av == target
    n = len(rows)
    summary = {"positions": n, "kl_mean": float(np.mean(kls)), "kl_p50": float(np.percentile(kls, 50)),
               "kl_p95": float(np.percentile(kls, 95)), "kl_p99": float(np.percentile(kls, 99)),
               "kl_max": float(np.max(kls)), "top1_agreement": agree / n, "ppl_ref": float(np.exp(nll_r / n)),
               "ppl_variant": float(np.exp(nll_v / n)), "acc_ref": acc_r / n, "acc_variant": acc_v / n,
               "flips": len(flip_margins), "flip_margin_p50": float(np.percentile(flip_margins, 50)),
               "flip_margin_max": float(np.max(flip_margins))}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": "tools/accuracy/make_metric_fixture.py (torch " + torch.__version__ + ", float64)",
                   "pairs": rows, "summary": summary}, f, indent=1)
    print(f"{OUT}: {n} pairs, mean KL {summary['kl_mean']:.6g}, agreement {summary['top1_agreement']:.3f}")


if __name__ == "__main__":
    main()
