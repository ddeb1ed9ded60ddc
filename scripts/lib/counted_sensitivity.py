"""Self-test of the counted metrics (driven by scripts/experiments/counted-sensitivity.sh):
does the suite call a +1 % instructions/request change "costlier", and does it keep quiet
when nothing changed?

1. Probe: one `matrix run --count-instructions` of the service plain and with
   `--burn-iters PROBE` and `2 × PROBE` measures its instructions/request, the instructions
   one loop iteration adds and the loop's fixed cost; the burn is the whole number of
   iterations nearest to +1 %.
2. Trials: each one `matrix run --count-instructions` at c1 with three services, `a` (the
   baseline), `a2` (identical: the A/A trial) and `b` (with the burn: the burn trial), so one
   run gives one trial of each kind; the repetitions interleave a, a2, b as every run does.

Prints one line per run, then how often instructions/request was called better/worse in the
A/A trials (the false verdicts), how often the burn was called "costlier", the other
metrics' verdicts for information, and PASS/FAIL against the issue's targets (<= 5 %;
>= 9 of 10; <= 15 min). Python 3 standard library only; reuses sensitivity.py's plumbing.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sensitivity import MARK, base_args, matrix_toml, report_tail, run_matrix  # noqa: E402

INS = "instructions_per_request"
METRICS = [
    (INS, "ins"),
    ("syscalls_per_request", "sys"),
    ("ctx_switches_per_request", "ctx"),
    ("cpu_us_per_request", "cpu"),
    ("requests_per_s", "rps"),
    ("latency_p50_us", "p50"),
]
EFFECT_PCT = 1.0
LOAD = '{ model = "closed", connections = [1] }'
COUNT = ["--count-instructions"]


def toml(a, rel, windows, reps, services):
    return matrix_toml(a, rel, 0, "pinned", windows, reps, services, load=LOAD,
                       scenario="ping")


def per_request(cells, service):
    """The per-repetition instructions/request of `service` in a run's cell files."""
    out = []
    for c in cells:
        if c["cell"]["service"] != service:
            continue
        for r in c["reps"]:
            ins = r.get("instructions") or {}
            if ins.get("per_request") is None:
                sys.exit(f"counted-sensitivity: {service}: not counted: {ins.get('unmeasured')}")
            out.append(ins["per_request"])
    if not out:
        sys.exit(f"counted-sensitivity: {service}: no repetition measured")
    return sorted(out)[len(out) // 2]


def probe(a, rel, windows):
    """Instructions/request of the plain service, per loop iteration (the slope between
    PROBE and 2 × PROBE iterations) and the loop's fixed cost once it runs at all (entry and
    exit of the non-zero path: the intercept), from medians."""
    k = a.probe_iters
    services = [("a", []), ("p1", ["--burn-iters", str(k)]),
                ("p2", ["--burn-iters", str(2 * k)])]
    _, cells, wall, foreign, _ = run_matrix(
        a, "run", toml(a, rel, windows, a.probe_reps, services),
        os.path.join(a.work, "probe"), COUNT)
    base, p1, p2 = (per_request(cells, s) for s in ("a", "p1", "p2"))
    per_iter = (p2 - p1) / k
    return base, per_iter, p1 - base - k * per_iter, wall, foreign


def verdicts_of(res, service):
    v = next((x for x in res.get("verdicts", []) if x["service"] == service), None)
    got = {m["metric"]: m for m in v["metrics"]} if v else {}
    return ({m: got.get(m, {}).get("verdict", "missing") for m, _ in METRICS},
            got.get(INS, {}).get("difference") or {})


def trial(a, rel, windows, i, iters):
    services = [("a", []), ("a2", []), ("b", ["--burn-iters", str(iters)])]
    res, _, wall, foreign, rc = run_matrix(
        a, "run", toml(a, rel, windows, a.reps, services), os.path.join(a.work, f"t{i}"),
        COUNT)
    aa, aa_d = verdicts_of(res, "a2")
    burn, burn_d = verdicts_of(res, "b")
    return {"aa": aa, "burn": burn, "aa_d": aa_d, "burn_d": burn_d, "wall": wall,
            "foreign": foreign, "failed": rc != 0}


def ratio(d):
    return "    –" if not d.get("ratio") else f"{d['ratio']:.4f}"


# The targets are rates over at least this many trials; fewer are a quick look, not judged.
MIN_TRIALS = 10


def judged(ok, n):
    """PASS/FAIL against a target, or why there is no verdict: too few trials to judge."""
    if n < MIN_TRIALS:
        return f"NOT JUDGED ({n} < {MIN_TRIALS} trials)"
    return "PASS" if ok else "FAIL"


def report(results, iters, injected_pct, wall_total):
    n = len(results)
    print()
    print(f"A/A ({n} trials): false better/worse per metric")
    for m, _ in METRICS:
        f = sum(r["aa"][m] in ("better", "worse") for r in results)
        print(f"  {m:<25} {f:>3} / {n}")
    false_ins = sum(r["aa"][INS] in ("better", "worse") for r in results)
    rate = 100.0 * false_ins / n if n else float("nan")
    print(f"A/A false verdicts on instructions/request: {false_ins} / {n} = {rate:.1f} %  -> "
          f"{judged(rate <= 5.0, n)} (target <= 5 % over >= {MIN_TRIALS} trials)")
    hits = sum(r["burn"][INS] == "worse" for r in results)
    print(f"Burn --burn-iters {iters} (+{injected_pct:.2f} % instructions/request): "
          f"'costlier' in {hits} / {n} trials  -> {judged(hits >= math.ceil(0.9 * n), n)} "
          f"(target >= 90 % of >= {MIN_TRIALS} trials)")
    ratios = [r["burn_d"]["ratio"] for r in results if r["burn_d"].get("ratio")]
    if ratios:
        print(f"  measured instructions/request ratio b/a: min {min(ratios):.4f}, "
              f"max {max(ratios):.4f}")
    print("  other metrics in the burn (information; better / no change / worse / other):")
    for m, _ in METRICS[1:]:
        c = [sum(r["burn"][m] == k for r in results) for k in ("better", "no_change", "worse")]
        print(f"    {m:<25} {c[0]} / {c[1]} / {c[2]} / {n - sum(c)}")
    return report_tail(results, wall_total, "run(s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    base_args(p, "ping-epoll")
    p.add_argument("--trials", type=int, default=10, help="runs, each one A/A + one burn")
    p.add_argument("--reps", type=int, default=2, help="repetitions per trial run")
    p.add_argument("--probe-iters", type=int, default=1000)
    p.add_argument("--probe-reps", type=int, default=2)
    p.add_argument("--windows", default="200,1000,100", help="warmup,duration,cooldown ms")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--loadgen-cpus", default="1")
    p.add_argument("--started", type=float, default=time.time(), help="unix s of the start")
    a = p.parse_args()
    rel = os.path.abspath(a.rel)
    windows = [int(x) for x in a.windows.split(",")]

    print(f"service {a.service}, closed loop c1, --count-instructions (Valgrind, slope of "
          f"2,000 and 6,000 requests), server CPUs {a.server_cpus}, loadgen CPUs "
          f"{a.loadgen_cpus}, windows {windows[0]}+{windows[1]}+{windows[2]} ms, "
          f"{a.reps} repetitions per run")
    base, per_iter, fixed, wall, foreign = probe(a, rel, windows)
    target = base * EFFECT_PCT / 100
    iters = max(1, round((target - fixed) / per_iter))
    injected_pct = 100 * (fixed + iters * per_iter) / base
    print(f"probe ({a.probe_reps} rounds, {wall:.0f} s, foreign CPU {foreign:.0f} %): "
          f"{base:.1f} instructions/request; --burn-iters adds {per_iter:.3f} per iteration "
          f"+ {fixed:.1f} once -> burn {iters} iterations = +{injected_pct:.2f} % (nearest "
          f"to +{EFFECT_PCT:.0f} %)")
    print()
    head = " ".join(f"{s:>4}" for _, s in METRICS)
    print(f"{'#':>3}  A/A: {head}  ins a2/a   burn: {head}  ins b/a  foreign  wall")
    results = []
    for i in range(a.trials):
        r = trial(a, rel, windows, i + 1, iters)
        results.append(r)
        mk = lambda v: " ".join(f"{MARK.get(v[m], '?'):>4}" for m, _ in METRICS)  # noqa: E731
        print(f"{i + 1:>3}       {mk(r['aa'])}  {ratio(r['aa_d'])}         {mk(r['burn'])}  "
              f"{ratio(r['burn_d'])} {r['foreign']:>5.0f} % {r['wall']:>4.0f} s"
              f"{' failed cell' if r['failed'] else ''}", flush=True)
    print("verdicts: = no change, + better, - worse, ? no interval, x missing; "
          "foreign: other processes' share of both CPUs during the run")
    fails = report(results, iters, injected_pct, time.time() - a.started)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
