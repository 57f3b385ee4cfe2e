#!/usr/bin/env python3
"""Build the ninfer-tiny training corpus from source code shipped in Debian packages on this machine.

Sources: the Python standard library (/usr/lib/python3.X/**/*.py, no site-/dist-packages) and C / C++ headers
(/usr/include/**/*.h, libstdc++ headers under /usr/include/c++/). Every file is assigned to train or held-out by a
hash of its path (deterministic, independent of the seed and of the file order), so held-out text never shares a file
with training text.

Each file yields
  * plain code documents: consecutive chunks of the file (every line once), and
  * ChatML conversations rendered with the official Qwen3.5 chat template (tests/data/tokenizer/chat_goldens.json,
    also written next to the corpus as chat_template.jinja): a user asks to continue a piece of code or to write a
    Python function (from its signature and docstring); the assistant answers with a short <think> block and the code.

Output (--out DIR): train.jsonl, heldout.jsonl (one {"kind", "source", "text"} per line), chat_template.jinja and
stats.json. Deterministic given --seed.
"""
import argparse
import ast
import glob
import hashlib
import json
import os
import random
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE_SOURCE = os.path.join(REPO, "tests", "data", "tokenizer", "chat_goldens.json")

SYSTEM_PROMPTS = [
    "You are ninfer-tiny, a small coding assistant.",
    "You are a helpful assistant that writes code.",
    "You are ninfer-tiny. Answer with code.",
]


def load_template():
    with open(TEMPLATE_SOURCE, encoding="utf-8") as f:
        return json.load(f)["templates"]["qwen35"]


def make_renderer(template_text):
    # Same environment settings as transformers' apply_chat_template (chat_template_utils._compile_jinja_template).
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    tmpl = env.from_string(template_text)

    def render(messages, add_generation_prompt=False):
        return tmpl.render(messages=messages, add_generation_prompt=add_generation_prompt)

    return render


def is_heldout(relpath, fraction):
    h = int.from_bytes(hashlib.sha1(relpath.encode("utf-8")).digest()[:4], "little")
    return (h % 10000) < fraction * 10000


def list_sources(max_bytes):
    py = []
    for root in sorted(glob.glob("/usr/lib/python3.*")):
        if not os.path.isdir(root) or not os.path.basename(root)[len("python3."):].isdigit():
            continue
        for p in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
            if "site-packages" in p or "dist-packages" in p:
                continue
            py.append(("python", p, os.path.relpath(p, os.path.dirname(root))))
    c = []
    for p in sorted(glob.glob("/usr/include/**/*", recursive=True)):
        if not os.path.isfile(p) or os.path.islink(p):
            continue
        base = os.path.basename(p)
        is_cxx_std = p.startswith("/usr/include/c++/") and "." not in base
        if not (base.endswith((".h", ".hpp", ".hh", ".tcc")) or is_cxx_std):
            continue
        lang = "cpp" if (p.startswith("/usr/include/c++/") or base.endswith((".hpp", ".hh", ".tcc"))) else "c"
        c.append((lang, p, os.path.relpath(p, "/usr/include")))
    out = []
    for lang, p, rel in py + c:
        try:
            size = os.path.getsize(p)
        except OSError:
            continue
        if size == 0 or size > max_bytes:
            continue
        out.append((lang, p, rel))
    return out


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "\x00" in text:
        return None
    return text.replace("\r\n", "\n").expandtabs(4) if "\t" in text else text.replace("\r\n", "\n")


LANG_NAME = {"python": "Python", "c": "C", "cpp": "C++"}
FENCE = {"python": "python", "c": "c", "cpp": "cpp"}


def plain_chunks(lines, rng, lo=30, hi=90):
    i = 0
    while i < len(lines):
        n = rng.randint(lo, hi)
        chunk = "".join(lines[i:i + n])
        i += n
        if chunk.strip():
            yield chunk


def short(line, n=60):
    s = line.strip()
    return s if len(s) <= n else s[: n - 3] + "..."


def continue_conversation(rng, lang, rel, lines):
    """A user pastes 6-30 lines and asks for the next 6-30."""
    if len(lines) < 16:
        return None
    for _ in range(8):
        n_pre = rng.randint(6, 30)
        n_suf = rng.randint(6, 30)
        start = rng.randint(0, max(0, len(lines) - n_pre - n_suf))
        pre = "".join(lines[start:start + n_pre]).rstrip("\n")
        suf = "".join(lines[start + n_pre:start + n_pre + n_suf]).rstrip("\n")
        if pre.strip() and suf.strip() and len(pre) < 2400 and len(suf) < 2400:
            break
    else:
        return None
    name = LANG_NAME[lang]
    asks = [
        f"Continue this {name} code from `{rel}`:",
        f"Here is part of `{rel}`. Continue it.",
        f"Complete the following {name} code:",
        f"What comes next in this {name} file?",
    ]
    last = [l for l in pre.split("\n") if l.strip()][-1]
    thinks = [
        f"This is {name} code from `{rel}`. The last line is `{short(last)}`, so I continue right after it.",
        f"The user wants the next lines of `{rel}`. I keep the same style and indentation.",
        f"A {name} snippet that stops at `{short(last)}`. I will write the lines that follow.",
    ]
    user = f"{rng.choice(asks)}\n\n```{FENCE[lang]}\n{pre}\n```"
    answer = f"```{FENCE[lang]}\n{suf}\n```"
    return user, rng.choice(thinks), answer


def python_functions(text):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node)
        if not doc:
            continue
        first = doc.strip().split("\n")[0].strip()
        if len(first) < 12 or len(first) > 160:
            continue
        start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
        end = node.end_lineno
        if end - start > 40 or end - start < 3:
            continue
        seg = "".join(lines[start:end])
        indent = len(seg) - len(seg.lstrip(" "))
        seg = "".join(l[indent:] if l.startswith(" " * indent) else l for l in lines[start:end]).rstrip("\n")
        try:
            sig = f"{node.name}({ast.unparse(node.args)})"
        except Exception:  # noqa: BLE001 - ast.unparse edge cases: skip the function
            continue
        out.append((node.name, sig, first, seg, end - start))
    return out


def write_conversation(rng, rel, fn):
    name, sig, first, code, nlines = fn
    module = rel.split("/", 1)[-1][:-3].replace("/", ".").removesuffix(".__init__")
    asks = [
        f"Write a Python function `{sig}`: {first}",
        f"Implement `{name}` for the `{module}` module. {first}",
        f"In Python, write `{sig}`. Docstring: \"{first}\"",
    ]
    body = code.split("\n")
    uses = []
    if any(l.strip().startswith(("for ", "while ")) for l in body):
        uses.append("a loop")
    if any(l.strip().startswith("if ") for l in body):
        uses.append("a condition")
    if any(l.strip().startswith("try:") for l in body):
        uses.append("error handling")
    if any(l.strip().startswith(("return", "yield")) for l in body):
        uses.append("a return value")
    plan = ", ".join(uses) if uses else "a few statements"
    thinks = [
        f"The user wants `{name}` from `{module}`. It should: {first} I need {plan}; about {nlines} lines.",
        f"`{sig}` -- {first} Plan: {plan}.",
        f"I will write `{name}` with its docstring. It uses {plan}.",
    ]
    return rng.choice(asks), rng.choice(thinks), f"```python\n{code}\n```"


def conversation_text(render, rng, user, think, answer):
    messages = []
    if rng.random() < 0.3:
        messages.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    messages.append({"role": "user", "content": user})
    messages.append({"role": "assistant", "content": answer, "reasoning_content": think})
    return render(messages)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "build-tiny", "work", "corpus"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--heldout-fraction", type=float, default=0.04)
    ap.add_argument("--max-file-bytes", type=int, default=120_000)
    ap.add_argument("--max-c-bytes", type=int, default=6_000_000, help="about this many bytes of C/C++ headers")
    ap.add_argument("--chats-per-file", type=int, default=3)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    template = load_template()
    render = make_renderer(template)
    with open(os.path.join(args.out, "chat_template.jinja"), "w", encoding="utf-8") as f:
        f.write(template)

    sources = list_sources(args.max_file_bytes)
    splits = {"train": [], "heldout": []}
    stats = {"files": {"train": 0, "heldout": 0}, "bytes_source": {"python": 0, "c": 0, "cpp": 0},
             "docs": {}, "chars": {"train": 0, "heldout": 0}}
    # Keep a hash-chosen subset of the C/C++ headers (spread over the whole tree) of about --max-c-bytes.
    c_total = sum(os.path.getsize(p) for lang, p, _ in sources if lang != "python")
    c_keep = min(1.0, args.max_c_bytes / max(1, c_total))
    for lang, path, rel in sources:
        if lang != "python":
            h = int.from_bytes(hashlib.sha1(("keep:" + rel).encode("utf-8")).digest()[:4], "little")
            if (h % 10000) >= c_keep * 10000:
                continue
        text = read_text(path)
        if text is None or not text.strip():
            continue
        split = "heldout" if is_heldout(rel, args.heldout_fraction) else "train"
        stats["files"][split] += 1
        stats["bytes_source"][lang] += len(text)
        rng = random.Random(f"{args.seed}:{rel}")
        lines = text.splitlines(keepends=True)
        docs = []
        for chunk in plain_chunks(lines, rng):
            docs.append(("plain", chunk))
        n_chat = args.chats_per_file if len(lines) >= 40 else 1
        fns = python_functions(text) if lang == "python" else []
        rng.shuffle(fns)
        for k in range(n_chat):
            conv = None
            if fns and (k % 2 == 0 or lang == "python" and rng.random() < 0.5):
                conv = write_conversation(rng, rel, fns.pop())
            else:
                conv = continue_conversation(rng, lang, rel, lines)
            if conv is None:
                continue
            kind = "chat_write" if conv[0].startswith(("Write", "Implement", "In Python")) else "chat_continue"
            docs.append((kind, conversation_text(render, rng, *conv)))
        for kind, t in docs:
            splits[split].append({"kind": kind, "source": rel, "text": t})
            stats["docs"][f"{split}/{kind}"] = stats["docs"].get(f"{split}/{kind}", 0) + 1
            stats["chars"][split] += len(t)

    for split, docs in splits.items():
        random.Random(f"{args.seed}:shuffle:{split}").shuffle(docs)
        with open(os.path.join(args.out, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
    stats["seed"] = args.seed
    stats["heldout_fraction"] = args.heldout_fraction
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    json.dump(stats, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
