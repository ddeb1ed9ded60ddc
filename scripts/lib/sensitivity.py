"""Self-test of the suite's statistics (driven by scripts/experiments/sensitivity.sh): A/A trials (one
service as baseline `a` and as `b`) and burn trials (`b` with `--burn-ns` adding 10 % to
the service's CPU/request), each trial one `matrix run`; prints the A/A false better/worse
rate over all metric verdicts and how often the slowdown was called "worse".

1. `matrix calibrate` at the cell: CPU/request at burn 0 (-> burn_ns = 10 % of it) and the
   spread of the paired B/A ratio (-> repetitions for the trials, unless --reps is given).
2. Trials, A/A and burn alternating so a change of the machine hits both kinds alike.

Python 3 standard library only. Run `scripts/experiments/sensitivity.sh`, not this file.
"""
import argparse
import glob
import json
import math
import os
import resource
import subprocess
import sys
import time

METRICS = [
    ("requests_per_s", "rps"),
    ("latency_p50_us", "p50"),
    ("latency_p99_us", "p99"),
    ("startup_us", "start"),
    ("idle_rss_bytes", "idle"),
    ("peak_rss_bytes", "peak"),
    ("cpu_us_per_request", "cpu"),
]
CPU = "cpu_us_per_request"
MARK = {"no_change": "=", "better": "+", "worse": "-", "undetermined": "?", "missing": "x"}
EFFECT_PCT = 10.0  # the slowdown to detect
POWER = "0.90"  # power the repetitions are chosen for (a key of TABLES)

# Student t quantiles by degrees of freedom (two-sided 95 %, and the one-sided 0.90 / 0.80
# used for power); beyond the table, the normal quantile.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
        2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
        2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
T90 = [3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372, 1.363, 1.356,
       1.350, 1.345, 1.341, 1.337, 1.333, 1.330, 1.328, 1.325, 1.323, 1.321, 1.319, 1.318,
       1.316, 1.315, 1.314, 1.313, 1.311, 1.310]
T80 = [1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873,
       0.870, 0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857,
       0.856, 0.856, 0.855, 0.855, 0.854, 0.854]
TABLES = {"0.975": (T975, 1.960), "0.90": (T90, 1.282), "0.80": (T80, 0.842)}


def t(q, df):
    table, z = TABLES[q]
    return table[df - 1] if df <= len(table) else z


def mde_pct(sd_pct, n, power):
    """Smallest relative difference a paired t test of n rounds detects at 95 % confidence
    with the given power (the usual shifted-t approximation of the noncentral t)."""
    return (t("0.975", n - 1) + t(power, n - 1)) * sd_pct / math.sqrt(n)


def matrix_toml(a, rel, rate, profile, windows, reps, services, calibration=False,
                load=None, scenario="open"):
    """A matrix file: the given services at one cell (open loop at `rate` unless `load`, a
    TOML inline table, says otherwise)."""
    load = load or f'{{ model = "open", rates_per_s = [{rate}], max_connections = 64 }}'
    lines = [
        "[defaults]",
        f"warmup_ms = {windows[0]}",
        f"duration_ms = {windows[1]}",
        f"cooldown_ms = {windows[2]}",
        f"repetitions = {reps}",
        "drift_points = 0",
        f'loadgen = "{rel}/loadgen"',
        'baseline = "a"',
        "",
    ]
    for name, args in services:
        lines += ["[[services]]", f'name = "{name}"', f'binary = "{rel}/{a.service}"']
        if args:
            lines.append("args = [" + ", ".join(f'"{x}"' for x in args) + "]")
        lines.append("")
    lines += [
        "[[scenarios]]",
        f'name = "{scenario}"',
        'path = "/ping"',
        "expect_body_bytes = 4",
        f"load = {load}",
        "",
        "[[profiles]]",
        f'name = "{profile}"',
        f'server_cpus = "{a.server_cpus}"',
        f'loadgen_cpus = "{a.loadgen_cpus}"',
        "",
    ]
    if calibration:
        lines += ["[calibration]", 'service = "a"', f'cells = ["open/r{rate}/{profile}"]', ""]
    return "\n".join(lines)


def busy_cpu_s():
    """Busy time of all CPUs since boot, seconds (user nice system irq softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_matrix(a, cmd, toml, out, extra=()):
    """One `matrix` run; (results.json, cell files, wall s, foreign CPU %). Foreign CPU: the
    machine's busy time that was not this run's (other processes on the shared machine), as a
    share of both CPUs over the run — a trial with a lot of it measured a disturbed machine."""
    path = os.path.join(a.work, f"{os.path.basename(out)}.toml")
    with open(path, "w") as f:
        f.write(toml)
    busy0, ours0, t0 = busy_cpu_s(), children_cpu_s(), time.monotonic()
    p = subprocess.run([os.path.join(a.rel, "matrix"), cmd, "--quiet", *extra, "--config",
                        path, "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, check=False)
    wall = time.monotonic() - t0
    foreign = (busy_cpu_s() - busy0) - (children_cpu_s() - ours0)
    foreign_pct = max(0.0, 100.0 * foreign / (wall * os.cpu_count()))
    found = glob.glob(os.path.join(out, "*", "results.json"))
    if p.returncode not in (0, 1) or not found:
        sys.exit(f"sensitivity: matrix {cmd} exited {p.returncode}:\n{p.stderr.strip()}")
    with open(found[0]) as f:
        results = json.load(f)
    cells = []
    for cf in glob.glob(os.path.join(os.path.dirname(found[0]), "cells", "*.json")):
        with open(cf) as f:
            cells.append(json.load(f))
    return results, cells, wall, foreign_pct, p.returncode


def calibrate(a, rel, profile, windows):
    """Step 1 and 2: CPU/request at burn 0 and the paired spread, from one calibration."""
    toml = matrix_toml(a, rel, a.rate, profile, windows, a.cal_reps, [("a", [])], True)
    res, cells, wall, foreign, _ = run_matrix(a, "calibrate", toml, os.path.join(a.work, "cal"))
    cal = res.get("calibration") or sys.exit("sensitivity: the calibration wrote no results")
    cell = cal["cells"][0]
    if cell.get("failures"):
        sys.exit(f"sensitivity: calibration failed: {cell['failures']}")
    cpu = [r["server"]["cpu_us_per_request"] for c in cells for r in c["reps"]
           if r["rep"] > 0 and r["server"].get("cpu_us_per_request")]
    metrics = {m["metric"]: m for m in cell["metrics"]}
    return sorted(cpu)[len(cpu) // 2], metrics, wall, foreign


def choose_reps(a, cal_metrics, sec_per_rep, fixed_s, elapsed):
    """Repetitions per trial: the fewest with power >= 0.90 against a 10 % change of
    CPU/request at the calibrated spread (at least --min-reps), cut to what fits the budget."""
    sd = cal_metrics[CPU]["paired_sd_pct"]
    need = next((n for n in range(a.min_reps, 31) if mde_pct(sd, n, POWER) <= EFFECT_PCT), 30)
    left = a.budget_s - elapsed - a.margin_s
    fits = int((left / (2 * a.trials) - fixed_s) / (2 * sec_per_rep))
    reps = max(3, min(need, fits))
    why = (f"paired sd of CPU/request {sd:.1f} % -> {need} rounds for power 0.90 against "
           f"{EFFECT_PCT:.0f} % (calibration's own reps_for_10_pct at power 0.80: "
           f"{cal_metrics[CPU]['reps_for_10_pct']}); the budget fits {fits}")
    return reps, sd, why


def trial(a, rel, profile, windows, reps, i, kind, burn_ns):
    args_b = ["--burn-ns", str(burn_ns)] if kind == "burn" else []
    toml = matrix_toml(a, rel, a.rate, profile, windows, reps, [("a", []), ("b", args_b)])
    res, _, wall, foreign, rc = run_matrix(a, "run", toml, os.path.join(a.work, f"t{i}"))
    v = next((x for x in res.get("verdicts", []) if x["service"] == "b"), None)
    got = {m["metric"]: m for m in v["metrics"]} if v else {}
    verdicts = {m: got.get(m, {}).get("verdict", "missing") for m, _ in METRICS}
    d = got.get(CPU, {}).get("difference") or {}
    return {"kind": kind, "verdicts": verdicts, "cpu": d, "wall": wall, "foreign": foreign,
            "failed": rc != 0, "suspect": res.get("suspect_cells") or 0}


def fmt(x, spec=".1f"):
    return "–" if x is None else format(x, spec)


def ratio_ci(d):
    if not d or d.get("ci95_low_pct") is None:
        return "      –"
    return (f"{d['ratio']:.3f} [{1 + d['ci95_low_pct'] / 100:.3f}–"
            f"{1 + d['ci95_high_pct'] / 100:.3f}]")


def report(a, results, burn_ns, cpu_us, wall_total):
    aa = [r for r in results if r["kind"] == "A/A"]
    burn = [r for r in results if r["kind"] == "burn"]
    print()
    print("A/A: false better/worse per metric (of trials)")
    false_total = 0
    for m, short in METRICS:
        f = sum(r["verdicts"][m] in ("better", "worse") for r in aa)
        false_total += f
        note = "  (open loop: fixed by the offered rate)" if m == "requests_per_s" else ""
        print(f"  {m:<20} {f:>3} / {len(aa)}{note}")
    comps = len(aa) * len(METRICS)
    rate = 100.0 * false_total / comps if comps else float("nan")
    ok_aa = comps > 0 and rate <= 5.0
    print(f"A/A false better/worse: {false_total} / {comps} metric comparisons = {rate:.1f} %"
          f"  -> {'PASS' if ok_aa else 'FAIL'} (target <= 5 %)")

    hits = sum(r["verdicts"][CPU] == "worse" for r in burn)
    need = math.ceil(0.9 * len(burn))
    ok_burn = len(burn) > 0 and hits >= need
    ratios = [r["cpu"]["ratio"] for r in burn if r["cpu"].get("ratio")]
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"Burn +{burn_ns} ns/request (10 % of {cpu_us:.2f} µs): CPU/request 'worse' in "
          f"{hits} / {len(burn)} trials  -> {'PASS' if ok_burn else 'FAIL'} "
          f"(target >= {need} of {len(burn)})")
    if ratios:
        print(f"  measured CPU/request ratio b/a: geometric mean {gm:.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    print("  other metrics in the burn trials (information; better/no change/worse/other):")
    for m, _ in METRICS:
        if m == CPU:
            continue
        c = [sum(r["verdicts"][m] == k for r in burn) for k in ("better", "no_change", "worse")]
        print(f"    {m:<20} {c[0]} / {c[1]} / {c[2]} / {len(burn) - sum(c)}")
    return report_tail(results, wall_total, "trial(s)")


def report_tail(results, wall_total, runs):
    """The failed runs and the wall time against the 15 min target; the failed count."""
    fails = sum(r["failed"] for r in results)
    if fails:
        print(f"{fails} {runs} had a failed cell (verdicts 'missing' there)")
    ok_wall = wall_total <= 900
    print(f"Wall time: {wall_total / 60:.1f} min  -> {'PASS' if ok_wall else 'FAIL'} "
          "(target <= 15 min)")
    return fails


def base_args(p, service):
    """The arguments every self-test takes: where the binaries are, scratch, the service."""
    p.add_argument("--rel", required=True, help="directory with matrix, loadgen, the service")
    p.add_argument("--work", required=True, help="temporary directory for matrix files, runs")
    p.add_argument("--service", default=service)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    base_args(p, "ping-tokio-hyper")
    p.add_argument("--rate", type=int, default=40000)
    p.add_argument("--trials", type=int, default=10, help="of each kind")
    p.add_argument("--reps", type=int, default=0, help="0: from the calibration")
    p.add_argument("--min-reps", type=int, default=8)
    p.add_argument("--cal-reps", type=int, default=10)
    p.add_argument("--windows", default="200,1000,100", help="warmup,duration,cooldown ms")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--loadgen-cpus", default="1")
    p.add_argument("--budget-s", type=float, default=900)
    p.add_argument("--margin-s", type=float, default=60)
    p.add_argument("--started", type=float, default=time.time(), help="unix s of the start")
    a = p.parse_args()
    rel = os.path.abspath(a.rel)
    windows = [int(x) for x in a.windows.split(",")]
    profile = "pinned"

    print(f"service {a.service}, open loop at {a.rate}/s, server CPUs {a.server_cpus}, "
          f"loadgen CPUs {a.loadgen_cpus}, windows {windows[0]}+{windows[1]}+{windows[2]} ms "
          f"(warmup+measured+cooldown), drift re-runs off")
    cpu_us, cal, cal_wall, cal_foreign = calibrate(a, rel, profile, windows)
    burn_ns = round(cpu_us * 1000 * EFFECT_PCT / 100)
    print(f"calibration ({a.cal_reps} rounds A B, {cal_wall:.0f} s, foreign CPU "
          f"{cal_foreign:.0f} %): CPU/request {cpu_us:.2f} µs (median) -> burn {burn_ns} ns")
    print("  per metric: paired sd % / MDE % at these rounds / rounds for 10 % (power 0.80)")
    for m, _ in METRICS:
        c = cal[m]
        print(f"    {m:<20} {fmt(c['paired_sd_pct']):>6} {fmt(c['mde_pct']):>6} "
              f"{fmt(c['reps_for_10_pct'], 'd'):>6}")

    fixed_s = 1.0  # per `matrix run`: start, planning, export
    sec_per_rep = max(0.5, (cal_wall - fixed_s) / (2 * a.cal_reps))
    if a.reps:
        reps, why = a.reps, "given (REPS)"
        sd = cal[CPU]["paired_sd_pct"]
    else:
        reps, sd, why = choose_reps(a, cal, sec_per_rep, fixed_s, time.time() - a.started)
    est = 2 * a.trials * (fixed_s + 2 * reps * sec_per_rep)
    print(f"repetitions per trial: {reps} ({why}); MDE of CPU/request at {reps} rounds: "
          f"{mde_pct(sd, reps, '0.80'):.1f} % (power 0.80), {mde_pct(sd, reps, '0.90'):.1f} % "
          f"(power 0.90); {2 * a.trials} trials, about {est / 60:.1f} min")
    print()
    head = " ".join(f"{s:>5}" for _, s in METRICS)
    print(f"{'#':>3} {'kind':<5} {head}   CPU/request b/a [95 % CI]   foreign  wall")
    results = []
    for i in range(2 * a.trials):
        kind = "A/A" if i % 2 == 0 else "burn"
        r = trial(a, rel, profile, windows, reps, i + 1, kind, burn_ns)
        results.append(r)
        marks = " ".join(f"{MARK.get(r['verdicts'][m], '?'):>5}" for m, _ in METRICS)
        flags = (" failed cell" if r["failed"] else "") + (
            f" {r['suspect']} suspect" if r["suspect"] else "")
        print(f"{i + 1:>3} {kind:<5} {marks}   {ratio_ci(r['cpu']):<26} {r['foreign']:>5.0f} %"
              f" {r['wall']:>4.0f} s{flags}", flush=True)
    print("verdicts: = no change, + better, - worse, ? no interval, x missing; "
          "foreign: other processes' share of both CPUs during the trial")
    fails = report(a, results, burn_ns, cpu_us, time.time() - a.started)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
