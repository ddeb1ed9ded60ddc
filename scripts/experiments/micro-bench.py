#!/usr/bin/env python3
"""Runtime micro-benchmarks: run each runtime's criterion group, then tabulate.

Runs `cargo bench -p runtime-bench --bench <runtime>` once per runtime, one after the other,
then reads criterion's saved estimates (<target>/criterion/<group>/<bench>/new/estimates.json,
only those written by this run) and writes

    results/micro/<UTC-time>-<commit>/micro.md     mean and 95 % CI per benchmark per group
    results/micro/<UTC-time>-<commit>/micro.json   the same, plus the raw criterion estimates

with the hardware, kernel, virtualisation, rustc, git commit + dirty flag, the commands and
the date.

    scripts/experiments/micro-bench.py                         # every runtime, criterion settings of the crate
    scripts/experiments/micro-bench.py tokio may               # some runtimes
    scripts/experiments/micro-bench.py -- --measurement-time 3 # extra arguments for criterion
    scripts/experiments/micro-bench.py --table-only            # re-tabulate the estimates already on disk

Env: CARGO_TARGET_DIR (target); BUILD_WRAP / MEASURE_WRAP: a command prefix for the build and
for each runtime's measurement (e.g. a CPU lock on a shared machine; recorded as set, not
its value).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = "runtime-bench"
RUNTIMES = ["tokio", "monoio", "may"]  # bench targets of bench/runtimes, in run order


def sh(*cmd):
    """Output of a command, stripped; None if it is missing or fails."""
    try:
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def read(path):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def virtualisation():
    if shutil.which("systemd-detect-virt"):
        # Exit status 1 with "none" when nothing is detected.
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True)
        return f"{out.stdout.strip() or 'none'} (systemd-detect-virt)"
    if Path("/.dockerenv").exists():
        return "docker (/.dockerenv)"
    flags = next((l for l in (read("/proc/cpuinfo") or "").splitlines() if l.startswith("flags")), "")
    if " hypervisor" in flags:
        return "virtual machine (cpuinfo hypervisor flag)"
    return "none detected"


def environment():
    cpuinfo = (read("/proc/cpuinfo") or "").splitlines()
    model = next((l.split(":", 1)[1].strip() for l in cpuinfo if l.startswith("model name")), None)
    status = sh("git", "status", "--porcelain", "--untracked-files=no")
    return {
        "cpu_model": model or platform.processor() or "unknown",
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "virtualisation": virtualisation(),
        "io_uring_disabled": read("/proc/sys/kernel/io_uring_disabled"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "rustc": sh("rustc", "-V"),
        "git_commit": sh("git", "rev-parse", "HEAD"),
        "git_dirty": None if status is None else status != "",
    }


def run(cmd, wrap_env):
    wrap = shlex.split(os.environ.get(wrap_env, ""))
    print("+", shlex.join(cmd), file=sys.stderr, flush=True)
    subprocess.run(wrap + cmd, cwd=ROOT, check=True)


def collect(criterion_dir, since):
    """{group: {bench: estimates}} for every estimates.json written at or after `since`,
    groups and benchmarks in the order they ran."""
    written = [
        (est.stat().st_mtime, est)
        for est in criterion_dir.glob("*/*/new/estimates.json")
        if est.stat().st_mtime >= since
    ]
    found = {}
    for _, est in sorted(written):
        meta = json.loads((est.parent / "benchmark.json").read_text())
        found.setdefault(meta["group_id"], {})[meta["function_id"]] = json.loads(est.read_text())
    return found


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def summary(est):
    m = est["mean"]
    ci = m["confidence_interval"]
    return {
        "mean_ns": m["point_estimate"],
        "ci_lower_ns": ci["lower_bound"],
        "ci_upper_ns": ci["upper_bound"],
        "confidence_level": ci["confidence_level"],
    }


def markdown(doc):
    groups = list(doc["groups"])
    benches = []
    for g in groups:
        benches += [b for b in doc["groups"][g] if b not in benches]
    env = doc["environment"]
    lines = [
        "# Runtime micro-benchmarks",
        "",
        f"Mean time per iteration with its 95 % confidence interval (criterion's bootstrap), "
        f"one criterion group per runtime, each on one worker thread. What each benchmark "
        f"measures: `bench/runtimes/src/lib.rs`.",
        "",
        "| benchmark | " + " | ".join(groups) + " |",
        "|---|" + "---:|" * len(groups),
    ]
    for b in benches:
        cells = []
        for g in groups:
            s = doc["groups"][g].get(b)
            cells.append(
                "–" if s is None
                else f"{fmt_ns(s['mean_ns'])} ({fmt_ns(s['ci_lower_ns'])} – {fmt_ns(s['ci_upper_ns'])})"
            )
        lines.append(f"| `{b}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| | |",
        "|---|---|",
        f"| date (UTC) | {doc['date']} |",
        f"| CPU | {env['cpu_model']}, {env['logical_cpus']} logical CPUs ({env['usable_cpus']} usable) |",
        f"| kernel | {env['kernel']} (io_uring_disabled = {env['io_uring_disabled']}) |",
        f"| virtualisation | {env['virtualisation']} |",
        f"| load average at start | {' '.join(map(str, env['load_average_at_start']))} |",
        f"| rustc | {env['rustc']} |",
        f"| git | {env['git_commit']}{' (dirty)' if env['git_dirty'] else ''} |",
        f"| command | `{doc['command']}` |",
    ]
    for c in doc["cargo_commands"]:
        lines.append(f"| | `{c}` |")
    if doc["wrapped"]:
        lines.append("| | each run under a command prefix (`MEASURE_WRAP`) |")
    lines.append(f"| duration | {doc['duration_s']} s |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runtimes", nargs="*", default=RUNTIMES, help=f"bench targets ({' '.join(RUNTIMES)})")
    p.add_argument("--table-only", action="store_true", help="do not run; tabulate existing estimates")
    p.add_argument("--out", default="results/micro", help="parent of the result directory")
    p.epilog = "Arguments after -- are passed to criterion."
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = p.parse_args(argv[:cut]), argv[cut + 1 :]

    env = environment()
    started = time.time()
    date = datetime.datetime.now(datetime.timezone.utc)
    criterion_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "criterion"
    commands = []
    if not args.table_only:
        run(["cargo", "bench", "-p", PACKAGE, "--locked", "--no-run"], "BUILD_WRAP")
        for rt in args.runtimes:
            cmd = ["cargo", "bench", "-p", PACKAGE, "--locked", "--bench", rt]
            cmd += ["--", *extra] if extra else []
            run(cmd, "MEASURE_WRAP")
            commands.append(shlex.join(cmd))
    found = collect(criterion_dir, 0 if args.table_only else started)
    if not found:
        sys.exit(f"micro-bench: no criterion estimates under {criterion_dir}")

    doc = {
        "schema": "pingmatrix_micro_v1",
        "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join(["scripts/experiments/micro-bench.py", *sys.argv[1:]]),
        "cargo_commands": commands,
        "wrapped": bool(os.environ.get("MEASURE_WRAP")) and not args.table_only,
        "duration_s": round(time.time() - started),
        "environment": env,
        "groups": {g: {b: summary(e) for b, e in benches.items()} for g, benches in found.items()},
        "criterion_estimates": found,
    }
    short = (env["git_commit"] or "nogit")[:7]
    out = ROOT / args.out / f"{date.strftime('%Y-%m-%dT%H-%M-%SZ')}-{short}"
    out.mkdir(parents=True, exist_ok=False)
    (out / "micro.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    (out / "micro.md").write_text(markdown(doc))
    print(out)


if __name__ == "__main__":
    main()
