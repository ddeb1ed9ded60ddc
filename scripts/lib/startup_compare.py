"""Compare the runner's start-up times with the independent probe's, for one service.

usage: startup_compare.py rounds-needed RUNNER PROBE ROUNDS_DONE MAX_ROUNDS
       startup_compare.py verdict SERVICE RUNNER PROBE

RUNNER and PROBE hold one start-up time (µs) per line. The tolerance is the issue's:
max(0.5 ms, 10 % of the probe's median).

`rounds-needed` is the second stage of a two-stage design: from the first rounds' spread it
sizes the sample so that the bootstrap 95 % interval of the median difference is no wider than
the tolerance (its half-width shrinks as 1/sqrt(n)), capped at MAX_ROUNDS. It looks only at
the spread, never at the difference itself, so adding rounds can't steer the verdict. A
service whose start is bimodal (glommio waits for an RCU grace period of 1–4 ticks) needs
many more starts than one with a tight start before its median means anything.

`verdict` prints medians, ratio, the median difference with its 95 % interval, and whether
the difference is within the tolerance; "(interval wider than tolerance)" flags a verdict the
sample can't carry.
"""
import random
import statistics
import sys

BOOTSTRAP = 2000


def load(path):
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def tolerance_us(probe):
    return max(500.0, 0.10 * statistics.median(probe))


def diff_interval(runner, probe, rng):
    """95 % percentile-bootstrap interval of median(runner) - median(probe)."""
    diffs = sorted(
        statistics.median(rng.choices(runner, k=len(runner)))
        - statistics.median(rng.choices(probe, k=len(probe)))
        for _ in range(BOOTSTRAP)
    )
    return diffs[int(0.025 * BOOTSTRAP)], diffs[int(0.975 * BOOTSTRAP) - 1]


def rounds_needed(runner_path, probe_path, done, cap):
    runner, probe = load(runner_path), load(probe_path)
    if not runner or not probe:
        return done
    lo, hi = diff_interval(runner, probe, random.Random(1))
    half, tol = (hi - lo) / 2, tolerance_us(probe)
    if half <= tol:
        return done
    return min(cap, int(done * (half / tol) ** 2) + 1)


def verdict(service, runner_path, probe_path):
    runner, probe = load(runner_path), load(probe_path)
    if not runner or not probe:
        return f"{service:<22} {'-':>12} {'-':>12} {'-':>8} {'-':>22} no data"
    r, p = statistics.median(runner), statistics.median(probe)
    lo, hi = diff_interval(runner, probe, random.Random(2))
    tol = tolerance_us(probe)
    ok = "yes" if abs(r - p) <= tol else "NO"
    if (hi - lo) / 2 > tol:
        ok += " (interval wider than tolerance)"
    ci = f"{(r - p) / 1000:+.2f} [{lo / 1000:+.2f}, {hi / 1000:+.2f}]"
    return (
        f"{service:<22} {r / 1000:12.2f} {p / 1000:12.2f} {r / p:8.3f} {ci:>22} "
        f"{len(runner):>3}/{len(probe):<3} {ok}"
    )


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "rounds-needed" and len(sys.argv) == 6:
        print(rounds_needed(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
    elif cmd == "verdict" and len(sys.argv) == 5:
        print(verdict(*sys.argv[2:5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
