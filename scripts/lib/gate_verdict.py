#!/usr/bin/env python3
"""The regression gate's verdict, from one run's results.json (scripts/gate.sh).

Reads the paired verdicts of CANDIDATE against BASELINE (`verdicts` in results.json:
every metric of every cell, the 95 % interval paired on rounds, the MDE from the run's
calibration) and prints a Markdown table. A cell's gate metric is req/s in closed loop and
server CPU per request in open loop (the rate is fixed there). It is a regression when the
runner's verdict is "worse" AND the change is larger than both THRESHOLD_PCT and the MDE
(so a change this run cannot tell apart from noise never fails the gate). Exit 1 on a
regression or when the candidate's cells could not be judged; 0 otherwise.

usage: gate_verdict.py RESULTS_JSON BASELINE CANDIDATE THRESHOLD_PCT
"""

import json
import sys

GATE_METRICS = {"closed": "requests_per_s", "open": "cpu_us_per_request"}


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path, baseline, candidate, threshold = sys.argv[1:]
    threshold = float(threshold)
    res = json.load(open(path))
    cells = {c["key"]: c for c in res.get("cells", [])}
    rows, regressions, unjudged = [], 0, 0
    for v in res.get("verdicts", []):
        if v.get("baseline") != baseline or v.get("service") != candidate:
            continue
        cell = cells.get(v["key"], {})
        model = "open" if cell.get("offered_rate_per_s") is not None else "closed"
        want = GATE_METRICS[model]
        m = next((m for m in v["metrics"] if m["metric"] == want), None)
        label = f'{v.get("scenario", "")}/{v.get("level", "")}/{v.get("profile", "")}'
        if m is None or m.get("difference") is None:
            unjudged += 1
            rows.append(f"| {label} | {want} | – | – | – | cannot be judged ✗ |")
            continue
        d = m["difference"]
        mde = m.get("mde_pct")
        change = d["change_pct"]
        worse = m["verdict"] == "worse"
        bar = max(threshold, mde or 0.0)
        failed = worse and abs(change) > bar
        regressions += failed
        verdict = "**REGRESSION** ✗" if failed else ("worse, within the bar" if worse else m["verdict"].replace("_", " "))
        mde_text = f"{mde:.1f} %" if mde is not None else "–"
        rows.append(
            f"| {label} | {want} | {change:+.1f} % [{d['ci95_low_pct']:+.1f}, {d['ci95_high_pct']:+.1f}] "
            f"| {mde_text} | {bar:.1f} % | {verdict} |"
        )
    if not rows:
        print(f"gate: no verdicts of {candidate} against {baseline} in {path}", file=sys.stderr)
        return 1
    print(f"## Regression gate: `{candidate}` against `{baseline}`\n")
    print("Both builds ran in this one job, interleaved (A B A B), paired on rounds. A regression is a "
          f"'worse' verdict whose change exceeds both the threshold ({threshold:g} %) and the run's MDE.\n")
    print("| cell | metric | change [95 % CI] | MDE | bar | verdict |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    ok = regressions == 0 and unjudged == 0
    print(f"\n**{'PASS' if ok else 'FAIL'}**: {regressions} regression(s), {unjudged} cell(s) not judged.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
