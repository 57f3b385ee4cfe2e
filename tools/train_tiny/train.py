#!/usr/bin/env python3
"""Train ninfer-tiny (Qwen3.5 hybrid + MTP head) on one CPU thread and write the HF checkpoint directory.

Deterministic from --seed: one thread, fixed generators for init and batch sampling, fixed step count. Training
runs under bf16 autocast (master weights, optimizer and the saved checkpoint are float32); every reported held-out
number is from a float32 forward. The loss is  CE(main, x_{t+1}) + mtp_weight * CE(mtp, x_{t+2}).

Writes into --out:
  checkpoint/   config.json (qwen3_5_text, mtp_num_hidden_layers 1), model.safetensors (main + mtp.*),
                generation_config.json, tokenizer.json, tokenizer_config.json, chat_template.jinja
  log.jsonl     one line per logged step (train) and per evaluation (held-out)
  summary.json  final numbers (parameters, tokens, losses, MTP agreement)
--max-minutes is a safety stop: if the wall clock runs out first, the checkpoint of the last step is written and
summary.json says "stopped_early": true.
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import TinyQwen35WithMTP, make_config  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.path.join(REPO, "build-tiny", "work")


def tokenize_split(tok, corpus_dir, split, cache_dir):
    path = os.path.join(cache_dir, f"{split}.npy")
    starts_path = os.path.join(cache_dir, f"{split}_starts.npy")
    if os.path.exists(path) and os.path.exists(starts_path):
        return np.load(path), np.load(starts_path)
    eot = tok.token_to_id("<|endoftext|>")
    ids, starts = [], []
    n = 0
    with open(os.path.join(corpus_dir, f"{split}.jsonl"), encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    for i in range(0, len(texts), 256):
        for enc in tok.encode_batch(texts[i:i + 256], add_special_tokens=False):
            starts.append(n)
            ids.extend(enc.ids)
            ids.append(eot)
            n += len(enc.ids) + 1
    arr = np.asarray(ids, dtype=np.uint16)
    st = np.asarray(starts, dtype=np.int64)
    os.makedirs(cache_dir, exist_ok=True)
    np.save(path, arr)
    np.save(starts_path, st)
    return arr, st


def sample_batch(rng, data, starts, batch, width):
    rows = []
    for _ in range(batch):
        if rng.random() < 0.5:
            s = int(starts[rng.integers(0, len(starts))])
            s = min(s, len(data) - width)
        else:
            s = int(rng.integers(0, len(data) - width))
        rows.append(data[s:s + width])
    return torch.from_numpy(np.stack(rows).astype(np.int64))


def heldout_windows(data, starts, count, width):
    # Evenly spaced windows, half starting at a document start (same mix as training).
    out = []
    for i in range(count):
        if i % 2 == 0:
            s = int(starts[(i * len(starts)) // count])
        else:
            s = (i * (len(data) - width)) // count
        s = min(s, len(data) - width)
        out.append(data[s:s + width])
    return torch.from_numpy(np.stack(out).astype(np.int64))


@torch.no_grad()
def evaluate(model, windows, batch, mtp_weight):
    model.eval()
    tot = {"main_loss": 0.0, "mtp_loss": 0.0, "mtp_agree": 0.0, "mtp_acc": 0.0, "main_acc": 0.0}
    n = 0
    for i in range(0, len(windows), batch):
        ids = windows[i:i + batch]
        _, main_loss, mtp_loss, logits, mlogits = model(ids, mtp_weight)
        main_next = logits.argmax(-1)                       # [B, W]: prediction for x_{t+1}
        mtp_next = mlogits.argmax(-1)                       # [B, W-2]: prediction for x_{t+2}
        k = ids.shape[0]
        tot["main_loss"] += main_loss.item() * k
        tot["mtp_loss"] += mtp_loss.item() * k
        tot["mtp_agree"] += (mtp_next == main_next[:, 1:-1]).float().mean().item() * k
        tot["mtp_acc"] += (mtp_next == ids[:, 2:]).float().mean().item() * k
        tot["main_acc"] += (main_next[:, :-1] == ids[:, 1:]).float().mean().item() * k
        n += k
    model.train()
    return {key: v / n for key, v in tot.items()}


def lr_at(step, steps, lr, warmup, min_ratio=0.1):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def save_checkpoint(model, tok_dir, out_dir, eos_ids, pad_id, bos_id):
    os.makedirs(out_dir, exist_ok=True)
    cfg = model.config.to_dict()
    cfg["architectures"] = ["Qwen3_5ForCausalLM"]
    cfg["mtp_num_hidden_layers"] = 1
    cfg["mtp_use_dedicated_embeddings"] = False
    cfg["attn_output_gate"] = True
    cfg["full_attention_interval"] = 3
    for k in ("_attn_implementation_autoset", "_name_or_path", "id2label", "label2id", "chunk_size_feed_forward",
              "is_encoder_decoder", "output_attentions", "output_hidden_states", "problem_type", "return_dict"):
        cfg.pop(k, None)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    tensors = {}
    for name, t in model.lm.state_dict().items():
        if name == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        tensors[name] = t.detach().to(torch.float32).contiguous().clone()
    for name, t in model.mtp.state_dict().items():
        tensors[f"mtp.{name}"] = t.detach().to(torch.float32).contiguous().clone()
    save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    gen = {
        "bos_token_id": bos_id,
        "eos_token_id": eos_ids,
        "pad_token_id": pad_id,
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "repetition_penalty": 1.0,
    }
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copyfile(os.path.join(tok_dir, name), os.path.join(out_dir, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(WORK, "corpus"))
    ap.add_argument("--tokenizer", default=os.path.join(WORK, "tokenizer"))
    ap.add_argument("--out", default=os.path.join(WORK, "run"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512, help="main-model targets per row (rows are seq + 2 tokens)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-windows", type=int, default=16)
    ap.add_argument("--max-minutes", type=float, default=44.0)
    ap.add_argument("--stop-at", type=int, default=None,
                    help="stop after this many steps of the --steps schedule (reproduces a run that hit --max-minutes)")
    ap.add_argument("--no-amp", action="store_true", help="train in float32 instead of bf16 autocast")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)

    tok = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    cache = os.path.join(args.out, "tokens")
    train_ids, train_starts = tokenize_split(tok, args.corpus, "train", cache)
    held_ids, held_starts = tokenize_split(tok, args.corpus, "heldout", cache)
    print(f"tokens: train {len(train_ids)}  heldout {len(held_ids)}  ({time.time() - t_start:.0f}s)", flush=True)

    config = make_config(tok.get_vocab_size(), [im_end, eot], eot, bos_token_id=eot)
    config._attn_implementation = "sdpa"
    model = TinyQwen35WithMTP(config)
    model.init_weights(args.seed)
    assert model.lm.lm_head.weight is model.lm.model.embed_tokens.weight
    n_params = sum(p.numel() for p in model.parameters())
    n_main = sum(p.numel() for p in model.lm.parameters())
    n_mtp = sum(p.numel() for p in model.mtp.parameters())
    print(f"parameters: total {n_params}  main {n_main}  mtp {n_mtp}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    rng = np.random.default_rng(args.seed)
    width = args.seq + 2
    eval_w = heldout_windows(held_ids, held_starts, args.eval_windows, width)
    log = open(os.path.join(args.out, "log.jsonl"), "w")
    stopped_early = False
    tokens_seen = 0
    step = 0
    ema = None
    for step in range(args.steps):
        if args.stop_at is not None and step >= args.stop_at:
            stopped_early = True
            break
        if (time.time() - t_start) / 60 > args.max_minutes:
            stopped_early = True
            print(f"wall-clock budget reached at step {step}", flush=True)
            break
        if step % args.eval_every == 0:
            ev = evaluate(model, eval_w, args.batch, args.mtp_weight)
            rec = {"type": "eval", "step": step, "tokens": tokens_seen, "wall_s": time.time() - t_start, **ev}
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(json.dumps(rec), flush=True)
        lr = lr_at(step, args.steps, args.lr, args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        ids = sample_batch(rng, train_ids, train_starts, args.batch, width)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=not args.no_amp):
            loss, main_loss, mtp_loss, _, _ = model(ids, args.mtp_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        tokens_seen += args.batch * args.seq
        ml = main_loss.item()
        ema = ml if ema is None else 0.95 * ema + 0.05 * ml
        rec = {"type": "train", "step": step + 1, "tokens": tokens_seen, "wall_s": time.time() - t_start,
               "lr": lr, "loss": loss.item(), "main_loss": ml, "mtp_loss": mtp_loss.item(), "grad_norm": gnorm}
        log.write(json.dumps(rec) + "\n")
        if (step + 1) % 10 == 0:
            log.flush()
            print(f"step {step + 1} main {ml:.3f} (ema {ema:.3f}) mtp {mtp_loss.item():.3f} lr {lr:.2e} "
                  f"gn {gnorm:.2f} {tokens_seen / (time.time() - t_start):.0f} tok/s", flush=True)
    else:
        step = args.steps
    ev = evaluate(model, eval_w, args.batch, args.mtp_weight)
    rec = {"type": "eval", "step": step, "tokens": tokens_seen, "wall_s": time.time() - t_start, **ev}
    log.write(json.dumps(rec) + "\n")
    log.close()
    print(json.dumps(rec), flush=True)

    ckpt = os.path.join(args.out, "checkpoint")
    save_checkpoint(model, args.tokenizer, ckpt, [im_end, eot], eot, eot)
    summary = {
        "seed": args.seed, "steps_planned": args.steps, "steps_done": step, "stopped_early": stopped_early,
        "argv": sys.argv[1:],
        "batch": args.batch, "seq": args.seq, "tokens_seen": tokens_seen, "lr": args.lr,
        "mtp_weight": args.mtp_weight, "amp_bf16": not args.no_amp,
        "parameters": {"total": n_params, "main": n_main, "mtp": n_mtp},
        "corpus_tokens": {"train": int(len(train_ids)), "heldout": int(len(held_ids))},
        "final_eval": ev, "wall_s": time.time() - t_start,
        "torch": torch.__version__,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1), flush=True)


if __name__ == "__main__":
    main()
