"""How often the README's example request comes back with an empty `content` (issue 21).

Sends README.md's example chat request (model, message, max_tokens as the README writes them) to a running
ninfer-serve once per seed 1..N, sampled at the server's defaults, and prints per seed the finish reason, the
reasoning tokens and the content length, then the number of empty answers. Standard library only; takes ~1 s per
request with ninfer-tiny on 2 CPU threads.

    build/apps/ninfer-serve --port 8080 &                       # the default model (or --model ..., --reasoning-budget ...)
    python3 tools/train_tiny/answer_rate.py --port 8080 --seeds 32 [--model NAME]
"""
import argparse
import json
import pathlib
import re
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]


def readme_request():
    text = (REPO / "README.md").read_text()
    m = re.search(r"-d '(\{\"model\".*?\})'", text)
    if not m:
        raise SystemExit("README.md has no example request (-d '{\"model\"...}')")
    return json.loads(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--seeds", type=int, default=32)
    ap.add_argument("--model", help="the served model id, when it is not the README's")
    args = ap.parse_args()
    base = readme_request()
    if args.model:
        base["model"] = args.model
    empty, reasoning = 0, []
    for seed in range(1, args.seeds + 1):
        body = dict(base, seed=seed)
        req = urllib.request.Request(f"http://127.0.0.1:{args.port}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        r = json.load(urllib.request.urlopen(req, timeout=600))
        content = r["choices"][0]["message"].get("content") or ""
        rt = r["usage"]["completion_tokens_details"]["reasoning_tokens"]
        reasoning.append(rt)
        empty += content.strip() == ""
        print(f"seed {seed}: finish_reason {r['choices'][0]['finish_reason']}, completion_tokens "
              f"{r['usage']['completion_tokens']}, reasoning_tokens {rt}, content {len(content)} chars", flush=True)
    print(f"empty content: {empty} of {args.seeds}; reasoning tokens {sorted(reasoning)}")


if __name__ == "__main__":
    main()
