#!/usr/bin/env python3
"""Per-kernel, per-architecture resource report from the ptxas -v output of a CUDA build.

Reads the <object>.ptxas.log files that scripts/cuda-ptxas-log.sh keeps beside each CUDA object (cmake option
NINFER_CUDA_RESOURCE_REPORT, on by default off Windows), writes a Markdown table (and JSON beside it) and exits
non-zero when a kernel or device function spills (spill stores or loads > 0) or uses more static shared memory
than sm_70 allows without opt-in (48 KiB), unless the allowlist names it. Usage: scripts/cuda-resources.sh.
"""
import argparse
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys

RE_START = re.compile(r"^ptxas info\s*:\s*\d+ bytes gmem")
RE_ENTRY = re.compile(r"^ptxas info\s*:\s*Compiling entry function '([^']+)' for '(sm_\d+a?)'")
RE_PROPS = re.compile(r"^ptxas info\s*:\s*Function properties for (\S+)")
RE_FRAME = re.compile(r"^\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
RE_USED = re.compile(r"^ptxas info\s*:\s*Used (\d+) registers")
RE_FIELD = {
    "barriers": re.compile(r"used (\d+) barriers"),
    "smem": re.compile(r"(\d+) bytes smem"),
    "cmem0": re.compile(r"(\d+) bytes cmem\[0\]"),
    "cum_stack": re.compile(r"(\d+) bytes cumulative stack size"),
}
SMEM_STATIC_LIMIT = 48 * 1024  # sm_70 (and every later arch) without cudaFuncSetAttribute opt-in


def objects_in_build(build):
    """Object files the build currently compiles (from compile_commands.json), to skip stale logs."""
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        return None
    objs = set()
    for e in json.load(open(path)):
        if not e.get("file", "").endswith(".cu"):
            continue
        out = e.get("output")
        if not out:
            args = shlex.split(e.get("command", "")) if "command" in e else e.get("arguments", [])
            for i, a in enumerate(args):
                if a == "-o" and i + 1 < len(args):
                    out = args[i + 1]
        if out:
            objs.add(os.path.normpath(os.path.join(e.get("directory", build), out)))
    return objs


def source_of(log, build):
    """kernels/CMakeFiles/ninfer_kernels.dir/gemm/x.cu.o.ptxas.log -> ninfer_kernels: gemm/x.cu"""
    rel = os.path.relpath(log, build)[: -len(".o.ptxas.log")]
    m = re.match(r"(?:(.*)/)?CMakeFiles/([^/]+)\.dir/(.*)", rel)
    if not m:
        return rel
    subdir, target, src = m.groups()
    return f"{subdir + '/' if subdir else ''}{src}" + ("" if target == "ninfer_kernels" else f" [{target}]")


def parse_log(text):
    """Yields dicts: name, arch, kind (kernel|function), regs, barriers, smem, cmem0, stack, spill_st, spill_ld."""
    out, cur, arch, pending = [], None, "?", []
    for line in text.splitlines():
        if RE_START.match(line):
            arch, cur = "?", None
            continue
        m = RE_ENTRY.match(line)
        if m:
            cur = {"name": m.group(1), "arch": m.group(2), "kind": "kernel", "regs": None, "barriers": 0, "smem": 0,
                   "cmem0": 0, "stack": 0, "spill_st": 0, "spill_ld": 0}
            arch = m.group(2)
            for p in pending:  # device functions reported before the first entry of this ptxas run
                p["arch"] = arch
            pending = []
            out.append(cur)
            continue
        m = RE_PROPS.match(line)
        if m:
            if cur is not None and cur["name"] == m.group(1) and cur["kind"] == "kernel" and cur["regs"] is None:
                continue  # the entry's own properties follow
            cur = {"name": m.group(1), "arch": arch, "kind": "function", "regs": None, "barriers": 0, "smem": 0,
                   "cmem0": 0, "stack": 0, "spill_st": 0, "spill_ld": 0}
            if arch == "?":
                pending.append(cur)
            out.append(cur)
            continue
        m = RE_FRAME.match(line)
        if m and cur is not None:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = (int(g) for g in m.groups())
            continue
        m = RE_USED.match(line)
        if m and cur is not None:
            cur["regs"] = int(m.group(1))
            for k, r in RE_FIELD.items():
                f = r.search(line)
                if f:
                    cur[k] = int(f.group(1))
    return out


def demangle(names):
    if not names:
        return {}
    try:
        p = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True)
        dem = p.stdout.splitlines()
        if len(dem) == len(names):
            return dict(zip(names, dem))
    except (OSError, subprocess.CalledProcessError):
        pass
    return {n: n for n in names}


def load_allow(path):
    rules = []
    if not path or not os.path.exists(path):
        return rules
    for n, raw in enumerate(open(path), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            sys.exit(f"{path}:{n}: want '<kernel glob> <arch glob> <spills|smem|all> [reason]'")
        kern, arch, what = parts[0], parts[1], parts[2].split()[0]
        if what not in ("spills", "smem", "all"):
            sys.exit(f"{path}:{n}: unknown check '{what}' (spills, smem, all)")
        rules.append((kern, arch, what, n))
    return rules


def allowed(rules, row, what):
    for kern, arch, w, _ in rules:
        if w not in (what, "all"):
            continue
        if not fnmatch.fnmatchcase(row["arch"], arch):
            continue
        if fnmatch.fnmatchcase(row["demangled"], kern) or fnmatch.fnmatchcase(row["name"], kern):
            return True
    return False


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", help="CUDA build dir configured with NINFER_CUDA_RESOURCE_REPORT=ON")
    ap.add_argument("--out", help="Markdown report (default BUILD/cuda-resources.md; JSON beside it)")
    ap.add_argument("--allow", default=os.path.join(here, "cuda-resources.allow"), help="allowlist file")
    ap.add_argument("--smem-limit", type=int, default=SMEM_STATIC_LIMIT, help="static smem limit in bytes")
    ap.add_argument("--no-fail", action="store_true",
                    help="report only, exit 0 on findings (also NINFER_CUDA_RESOURCES_NO_FAIL=1)")
    a = ap.parse_args()
    a.no_fail = a.no_fail or os.environ.get("NINFER_CUDA_RESOURCES_NO_FAIL") == "1"

    build = os.path.abspath(a.build)
    out_md = a.out or os.path.join(build, "cuda-resources.md")
    live = objects_in_build(build)
    logs = []
    for root, _, files in os.walk(build):
        for f in files:
            if f.endswith(".o.ptxas.log"):
                p = os.path.join(root, f)
                if live is None or os.path.normpath(p[: -len(".ptxas.log")]) in live:
                    logs.append(p)
    logs.sort()
    if not logs:
        print(f"cuda-resources: no *.ptxas.log under {build}: configure with -DNINFER_CUDA_RESOURCE_REPORT=ON "
              "and build the CUDA targets first", file=sys.stderr)
        return 2

    rows = []
    for log in logs:
        src = source_of(log, build)
        for r in parse_log(open(log, errors="replace").read()):
            r["source"] = src
            rows.append(r)
    dem = demangle(sorted({r["name"] for r in rows}))
    for r in rows:
        r["demangled"] = dem.get(r["name"], r["name"])
    # Same kernel compiled into several objects (templates) reports once per object; keep them all, they may differ.
    rows.sort(key=lambda r: (r["source"], r["kind"] != "kernel", r["demangled"], r["arch"]))

    rules = load_allow(a.allow)
    problems, allowed_rows = [], []
    for r in rows:
        r["problems"] = []
        if r["spill_st"] or r["spill_ld"]:
            msg = f"spills {r['spill_st']} B stores / {r['spill_ld']} B loads"
            (allowed_rows if allowed(rules, r, "spills") else problems).append((r, msg))
            r["problems"].append(msg + (" (allowed)" if allowed(rules, r, "spills") else ""))
        if r["smem"] > a.smem_limit:
            msg = f"static smem {r['smem']} B > {a.smem_limit} B"
            (allowed_rows if allowed(rules, r, "smem") else problems).append((r, msg))
            r["problems"].append(msg + (" (allowed)" if allowed(rules, r, "smem") else ""))

    archs = sorted({r["arch"] for r in rows})
    kernels = [r for r in rows if r["kind"] == "kernel"]
    lines = [
        f"# CUDA resource usage: {os.path.basename(build)}",
        "",
        f"From ptxas -v at compile time ({len(logs)} objects, {len(kernels)} kernel x arch rows, archs "
        f"{', '.join(archs) or 'none'}). Written by scripts/cuda-resources.sh. Fails on spills > 0 or static smem "
        f"> {a.smem_limit} B unless `{os.path.relpath(a.allow, os.path.dirname(here))}` allows it.",
        "",
        f"**{'FAIL' if problems else 'OK'}**: {len(problems)} problem(s), {len(allowed_rows)} allowed.",
        "",
        "| source | kernel | arch | regs | spill st/ld (B) | static smem (B) | stack (B) | barriers | cmem[0] (B) | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        name = r["demangled"] + ("" if r["kind"] == "kernel" else " (device fn)")
        name = name.replace("|", "\\|")
        regs = "" if r["regs"] is None else str(r["regs"])
        lines.append(f"| {r['source']} | `{name}` | {r['arch']} | {regs} | {r['spill_st']}/{r['spill_ld']} | "
                     f"{r['smem']} | {r['stack']} | {r['barriers']} | {r['cmem0']} | {'; '.join(r['problems'])} |")
    if not rows:
        lines.append("| (no kernels compiled yet) | | | | | | | | | |")
    os.makedirs(os.path.dirname(out_md) or ".", exist_ok=True)
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(out_md)[0] + ".json", "w") as f:
        json.dump({"build": build, "archs": archs, "objects": len(logs), "rows": rows,
                   "problems": [{"kernel": r["demangled"], "arch": r["arch"], "what": m} for r, m in problems]},
                  f, indent=1)

    print(f"cuda-resources: {len(kernels)} kernel x arch rows ({', '.join(archs) or 'no kernels'}) from "
          f"{len(logs)} objects -> {out_md}")
    if kernels:
        worst = max(kernels, key=lambda r: r["regs"] or 0)
        print(f"cuda-resources: max registers {worst['regs']} ({worst['demangled']}, {worst['arch']}); "
              f"max static smem {max(r['smem'] for r in kernels)} B")
    for r, m in allowed_rows:
        print(f"cuda-resources: allowed: {r['demangled']} [{r['arch']}] {m} ({r['source']})")
    for r, m in problems:
        print(f"cuda-resources: PROBLEM: {r['demangled']} [{r['arch']}] {m} ({r['source']})", file=sys.stderr)
    if problems and not a.no_fail:
        print(f"cuda-resources: {len(problems)} problem(s); fix the kernel or add it to the allowlist with a reason",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
