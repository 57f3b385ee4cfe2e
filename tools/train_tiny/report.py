#!/usr/bin/env python3
"""Model-card material for a trained ninfer-tiny run: loss-curve PNG, held-out evaluation, sample outputs.

  * docs/ninfer-tiny-loss.png from <run>/log.jsonl (train main/MTP loss per step, held-out main/MTP loss per eval)
  * held-out evaluation in float32 through transformers' Qwen3_5ForCausalLM + the MTP head on --windows windows of
    --seq tokens: main / MTP loss, MTP top-1 agreement with the main head (argmax MTP(h_p, x_{p+1}) == argmax main
    logits at p+1, i.e. the drafter proposes what the target would predict), and along greedy generations the k=1
    draft acceptance (MTP's proposal equals the target's next greedy token)
  * sample outputs: greedy and sampled (generation_config: temperature / top_p / top_k) chat completions
Writes <run>/report.json; prints everything.
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import load  # noqa: E402
from train import heldout_windows, tokenize_split  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

PROMPTS = [
    "Write a Python function `fibonacci(n)`: Return the n-th Fibonacci number.",
    "Continue this Python code from `json/decoder.py`:\n\n```python\ndef _decode_uXXXX(s, pos):\n```",
    "Write a Python function `read_lines(path)`: Read a text file and return its lines.",
    "Continue this C code from `stdio.h`:\n\n```c\nextern int fclose (FILE *__stream);\n```",
]


def plot(log_path, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recs = [json.loads(l) for l in open(log_path)]
    tr = [r for r in recs if r["type"] == "train"]
    ev = [r for r in recs if r["type"] == "eval"]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    steps = np.array([r["step"] for r in tr])

    def smooth(x, k=10):
        x = np.asarray(x)
        return np.array([x[max(0, i - k + 1):i + 1].mean() for i in range(len(x))])

    ax.plot(steps, [r["main_loss"] for r in tr], color="tab:blue", alpha=0.25, lw=0.8)
    ax.plot(steps, smooth([r["main_loss"] for r in tr]), color="tab:blue", label="train, main (next token)")
    ax.plot(steps, smooth([r["mtp_loss"] for r in tr]), color="tab:orange", label="train, MTP (next-next token)")
    ax.plot([r["step"] for r in ev], [r["main_loss"] for r in ev], "o-", color="navy", label="held-out, main")
    ax.plot([r["step"] for r in ev], [r["mtp_loss"] for r in ev], "s-", color="darkorange", label="held-out, MTP")
    ax.set_xlabel("step (8 x 512 tokens)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("ninfer-tiny training (1 CPU thread)")
    ax.set_ylim(0, max(9.5, ax.get_ylim()[1]))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)
    print(f"wrote {png}")


@torch.no_grad()
def heldout_eval(lm, mtp, windows):
    tot = dict(main_loss=0.0, mtp_loss=0.0, agree=0.0, mtp_acc=0.0, main_acc=0.0)
    n = 0
    for ids in windows:
        ids = ids[None]
        h = lm.model(input_ids=ids, use_cache=False).last_hidden_state
        logits = lm.lm_head(h)[0]
        e = lm.model.embed_tokens(ids[:, 1:-1])
        ml = lm.lm_head(mtp(e, h[:, :-2], lm.model.rotary_emb))[0]
        x = ids[0]
        tot["main_loss"] += torch.nn.functional.cross_entropy(logits[:-1], x[1:]).item()
        tot["mtp_loss"] += torch.nn.functional.cross_entropy(ml, x[2:]).item()
        tot["agree"] += (ml.argmax(-1) == logits[1:-1].argmax(-1)).float().mean().item()
        tot["mtp_acc"] += (ml.argmax(-1) == x[2:]).float().mean().item()
        tot["main_acc"] += (logits[:-1].argmax(-1) == x[1:]).float().mean().item()
        n += 1
    return {k: v / n for k, v in tot.items()}


@torch.no_grad()
def generate(lm, tok, messages, n, sample, seed, gen_cfg):
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    kw = dict(max_new_tokens=n, eos_token_id=gen_cfg["eos_token_id"], pad_token_id=gen_cfg["pad_token_id"])
    if sample:
        torch.manual_seed(seed)
        kw.update(do_sample=True, temperature=gen_cfg["temperature"], top_p=gen_cfg["top_p"], top_k=gen_cfg["top_k"])
    else:
        kw.update(do_sample=False)
    out = lm.generate(ids, **kw)[0, ids.shape[1]:]
    return ids[0], out


@torch.no_grad()
def draft_acceptance(lm, mtp, prompt, cont):
    """k=1 MTP draft acceptance along a greedy continuation: MTP(h_p, x_{p+1}) == x_{p+2} (x = greedy tokens)."""
    seq = torch.cat([prompt, cont])[None]
    h = lm.model(input_ids=seq, use_cache=False).last_hidden_state
    e = lm.model.embed_tokens(seq[:, 1:])
    ml = lm.lm_head(mtp(e, h[:, :-1], lm.model.rotary_emb))[0]
    start = len(prompt) - 1
    d = ml[start:start + len(cont) - 1].argmax(-1)
    return int((d == cont[1:]).sum()), len(cont) - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=str(REPO / "build-tiny/work/run"))
    ap.add_argument("--corpus", default=str(REPO / "build-tiny/work/corpus"))
    ap.add_argument("--png", default=str(REPO / "docs/ninfer-tiny-loss.png"))
    ap.add_argument("--windows", type=int, default=48)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=96)
    args = ap.parse_args()
    torch.set_num_threads(1)
    run = Path(args.run)
    plot(run / "log.jsonl", args.png)

    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    ck = str(run / "checkpoint")
    tok = AutoTokenizer.from_pretrained(ck)
    lm, mtp = load(ck, torch.float32)
    raw = Tokenizer.from_file(os.path.join(ck, "tokenizer.json"))
    held, starts = tokenize_split(raw, args.corpus, "heldout", str(run / "tokens"))
    ev = heldout_eval(lm, mtp, heldout_windows(held, starts, args.windows, args.seq + 2))
    print("held-out:", json.dumps(ev))
    gen_cfg = json.load(open(os.path.join(ck, "generation_config.json")))
    samples, acc, tot = [], 0, 0
    for i, p in enumerate(PROMPTS):
        msgs = [{"role": "user", "content": p}]
        prompt, g = generate(lm, tok, msgs, args.new_tokens, False, 0, gen_cfg)
        a, t = draft_acceptance(lm, mtp, prompt, g)
        acc, tot = acc + a, tot + t
        _, s = generate(lm, tok, msgs, args.new_tokens, True, 1000 + i, gen_cfg)
        samples.append(dict(prompt=p, greedy=tok.decode(g, skip_special_tokens=False),
                            sampled=tok.decode(s, skip_special_tokens=False), greedy_mtp_accept=f"{a}/{t}"))
        print(f"--- {p!r}\n[greedy, MTP k=1 accepts {a}/{t}]\n{samples[-1]['greedy']}\n[sampled]\n"
              f"{samples[-1]['sampled']}\n", flush=True)
    rep = dict(heldout=ev, heldout_windows=args.windows, heldout_seq=args.seq,
               greedy_mtp_acceptance=acc / max(1, tot), greedy_mtp_accepted=acc, greedy_mtp_drafts=tot,
               samples=samples)
    (run / "report.json").write_text(json.dumps(rep, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in rep.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()
