#!/usr/bin/env python3
"""The regression gate's verdict (scripts/gate.sh), from one run's results.json and, when a
counted regression was measured again in fresh processes, the confirming run's.

Two arms, judged on the runner's paired differences (`verdicts` in results.json: CANDIDATE
against BASELINE, the 95 % interval paired on rounds, the MDE from the run's own A/A
calibration of BASELINE):

- counted: syscalls, context switches and instructions per request. Regressed when the
  change is costlier, its interval excludes 0, and it exceeds the metric's threshold: the
  larger of the A/A MDE of that metric in this run and COUNTED_FLOOR_PCT. Counted changes
  are exact enough that the runner's 2 % "no change" band would hide a real 1 % one.
- time: req/s in closed loop, server CPU per request in open loop. Regressed when the
  runner's verdict is "worse" and the change exceeds both THRESHOLD_PCT and the MDE (a
  change the run cannot tell from noise never fails it).

A regression of either arm fails the gate only when the confirming run (fresh processes, the
other order, fewer rounds) sees it again — worse past the first run's threshold, its interval
excluding 0. A count that does not repeat is "unstable", which fails as well, never passes; a
time that does not repeat is "not repeated" (the noise its MDE describes), shown, not failed. Prints Markdown (the job summary); --json writes the same verdicts as data.

usage: gate_verdict.py [--json OUT] [--confirm RESULTS_JSON] [--page URL]
                       RESULTS_JSON BASELINE CANDIDATE THRESHOLD_PCT METRICS
METRICS: comma-separated, from: syscalls_per_request, ctx_switches_per_request,
instructions_per_request, packets_per_request, socket_sends_per_request,
io_uring_submissions_per_request, time.
exit: 0 pass; 1 fail (a regression, an unstable one, or a gated metric that cannot be
judged); 2 bad input; 3 a regression to confirm (only without --confirm).
"""

import argparse
import json
import math
import sys

COUNTED = {
    "syscalls_per_request": "syscalls/request",
    "ctx_switches_per_request": "context switches/request",
    "instructions_per_request": "instructions/request",
    # Kernel events (perf tracepoints, the runner's `metric::KERNEL`): work the syscall count
    # cannot see — a split write, an io_uring operation. 0 on both sides (io_uring submissions
    # of an epoll service) has no ratio: "cannot be judged", so gate that one on io_uring
    # services only.
    "packets_per_request": "packets/request",
    "socket_sends_per_request": "socket sends/request",
    "io_uring_submissions_per_request": "io_uring submissions/request",
}
TIME = {"closed": "requests_per_s", "open": "cpu_us_per_request"}
LABELS = {**COUNTED, "requests_per_s": "req/s", "cpu_us_per_request": "CPU/request"}
METRIC_NAMES = [*COUNTED, "time"]
# Below this a counted change is not gated, however exact: a service's count moves by that much
# with how its requests happen to batch (a few syscalls in thousands of requests).
COUNTED_FLOOR_PCT = 0.5
EXIT_CONFIRM = 3
# The verdicts that fail the gate; of them, the findings (a regression seen, once or twice).
FAILING = ("regressed", "regressed (confirmed)", "unstable", "cannot be judged")
FOUND = ("regressed", "regressed (confirmed)", "unstable")


class BadInput(Exception):
    pass


def parse_metrics(text):
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in METRIC_NAMES]
    if unknown or not names:
        raise BadInput(
            f"unknown gated metric(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"valid: {', '.join(METRIC_NAMES)}"
        )
    return names


def parse_threshold(text):
    try:
        t = float(text)
    except ValueError:
        raise BadInput(f"THRESHOLD_PCT must be a number of percent, got {text!r}") from None
    if not math.isfinite(t) or not 0 < t <= 100:
        raise BadInput(f"THRESHOLD_PCT must be in (0, 100], got {text!r}")
    return t


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot read {path}: {e}") from None
    if not isinstance(res, dict):
        raise BadInput(f"{path}: not a results.json object")
    return res


def num(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def judge_run(res, baseline, candidate, threshold, metrics):
    """Rows (one per cell and gated metric) and the reasons nothing could be judged."""
    cells = {c.get("key"): c for c in res.get("cells") or [] if isinstance(c, dict)}
    cal = res.get("calibration") if isinstance(res.get("calibration"), dict) else {}
    calibrated = {f'{c.get("scenario")}/{c.get("level")}/{c.get("profile")}'
                  for c in cal.get("cells") or [] if isinstance(c, dict)}
    rows = []
    seen = False
    for v in res.get("verdicts") or []:
        if not isinstance(v, dict) or v.get("baseline") != baseline or v.get("service") != candidate:
            continue
        seen = True
        cell = cells.get(v.get("key"), {})
        model = "open" if cell.get("offered_rate_per_s") is not None else "closed"
        label = f'{v.get("scenario", "")}/{v.get("level", "")}/{v.get("profile", "")}'
        by_name = {m.get("metric"): m for m in v.get("metrics") or [] if isinstance(m, dict)}
        wanted = [m for m in metrics if m != "time"]
        if "time" in metrics:
            wanted.append(TIME[model])
        for name in wanted:
            m = by_name.get(name)
            if m is None:
                # Instructions are counted in closed-loop c1 cells only; elsewhere they do not apply.
                if name == "instructions_per_request" and (model == "open" or v.get("level") != "c1"):
                    continue
                rows.append(row(label, name, None, None, "cannot be judged", "not measured in this cell (results.md says why)"))
                continue
            r = judge_metric(label, name, m, threshold)
            if r["arm"] == "counted" and label not in calibrated and r["verdict"] != "cannot be judged":
                # Its threshold would be the floor alone, below what batching moves it by.
                r["verdict"], r["threshold_pct"] = "not gated", None
                r["why"] = "no A/A of this cell in this run"
            rows.append(r)
    reasons = []
    if not seen:
        failed = [c for c in cells.values() if c.get("service") == candidate and c.get("status") != "ok"]
        if failed:
            reasons.append(f"{candidate}: {failed[0].get('status')}: {failed[0].get('failure') or 'no reason recorded'}")
        elif not any(c.get("service") == candidate for c in cells.values()):
            reasons.append(f"{candidate} has no cells in this run")
        else:
            reasons.append(f"no verdicts of {candidate} against {baseline} in this run")
    return rows, reasons


def row(cell, metric, d, threshold, verdict, why, mde=None):
    return {
        "cell": cell,
        "metric": metric,
        "arm": "counted" if metric in COUNTED else "time",
        "change_pct": num((d or {}).get("change_pct")),
        "ci95_low_pct": num((d or {}).get("ci95_low_pct")),
        "ci95_high_pct": num((d or {}).get("ci95_high_pct")),
        "mde_pct": num(mde),
        "threshold_pct": num(threshold),
        "verdict": verdict,
        "why": why,
    }


def judge_metric(cell, name, m, threshold):
    d = m.get("difference")
    mde = num(m.get("mde_pct"))
    if not isinstance(d, dict) or num(d.get("change_pct")) is None:
        return row(cell, name, None, None, "cannot be judged", "no interval (fewer than two repetitions on a side)", mde)
    change, low, high = num(d.get("change_pct")), num(d.get("ci95_low_pct")), num(d.get("ci95_high_pct"))
    if low is None or high is None:
        return row(cell, name, d, None, "cannot be judged", "no interval", mde)
    if name in COUNTED:
        bar = max(COUNTED_FLOOR_PCT, mde or 0.0)
        why = (f"A/A MDE of this metric in this run ({mde:.2f} %)" if mde is not None and mde >= COUNTED_FLOOR_PCT
               else f"floor {COUNTED_FLOOR_PCT:g} % (A/A MDE {'%.3f %%' % mde if mde is not None else 'unknown'})")
        if change > bar and low > 0:
            verdict = "regressed"
        elif change < -bar and high < 0:
            verdict = "improved"
        else:
            verdict = "unchanged"
        return row(cell, name, d, bar, verdict, why, mde)
    bar = max(threshold, mde or 0.0)
    why = f"larger of THRESHOLD_PCT ({threshold:g} %) and the MDE ({'%.1f %%' % mde if mde is not None else 'unknown'})"
    worse = m.get("verdict") == "worse"
    better = m.get("verdict") == "better"
    if worse and abs(change) > bar:
        verdict = "regressed"
    elif better and abs(change) > bar:
        verdict = "improved"
    else:
        verdict = "unchanged"
    if verdict == "unchanged" and worse:
        why += "; worse, within the bar"
    return row(cell, name, d, bar, verdict, why, mde)


def repeats(r, r2):
    """Whether the confirming run's row `r2` sees `r`'s regression again: worse past the first
    run's threshold, its interval excluding 0. The first run's threshold, because the
    confirming run has fewer rounds and so a wider MDE of its own."""
    if not r2 or r2["change_pct"] is None or r2["ci95_low_pct"] is None:
        return False
    if r["metric"] == "requests_per_s":  # the one metric where less is worse
        return r2["change_pct"] < -r["threshold_pct"] and r2["ci95_high_pct"] < 0
    return r2["change_pct"] > r["threshold_pct"] and r2["ci95_low_pct"] > 0


def confirm(rows, rows2):
    """The first run's regressions, either arm, judged again by the confirming run."""
    again = {(r["cell"], r["metric"]): r for r in rows2}
    for r in rows:
        if r["verdict"] != "regressed":
            continue
        r2 = again.get((r["cell"], r["metric"]))
        r["confirm_change_pct"] = r2["change_pct"] if r2 else None
        if repeats(r, r2):
            r["verdict"] = "regressed (confirmed)"
        elif r["arm"] == "time":
            # A time that moved once past a wide MDE and not again is the noise the MDE
            # describes: shown, not failed. A count that does not repeat is a finding.
            r["verdict"] = "not repeated"
        else:
            r["verdict"] = "unstable"
            r["why"] += "; the confirming run " + (
                f"measured {r2['change_pct']:+.2f} % ({r2['verdict']})" if r2 and r2["change_pct"] is not None
                else "could not judge it")


def pct(x, digits=1):
    return "–" if x is None else f"{x:+.{digits}f} %"


def headline(rows, candidate, service):
    counted = [r for r in rows if r["arm"] == "counted"]
    parts = []
    for r in rows:
        if r["verdict"] in FOUND:
            word = "costs" if r["arm"] == "counted" else "moves"
            extra = " (unstable: not repeated)" if r["verdict"] == "unstable" else ""
            parts.append(f"head {word} {pct(r['change_pct'])} {LABELS[r['metric']]} on {service} at {r['cell']}{extra}")
    for name, label in COUNTED.items():
        mine = [r for r in counted if r["metric"] == name]
        mine = [r for r in mine if r["verdict"] != "not gated"]
        if mine and all(r["verdict"] == "unchanged" for r in mine):
            parts.append(f"{label.split('/')[0]} unchanged")
        elif mine and any(r["verdict"] == "improved" for r in mine) and not any(
                r["verdict"] in FOUND for r in mine):
            parts.append(f"{label.split('/')[0]} improved")
    time = [r for r in rows if r["arm"] == "time"]
    for r in time:
        if r["verdict"] == "not repeated":
            parts.append(f"{LABELS[r['metric']]} at {r['cell']} moved {pct(r['change_pct'])} once, not again (noise)")
    if time and all(r["verdict"] in ("unchanged", "not repeated") for r in time):
        mdes = [r["mde_pct"] for r in time if r["mde_pct"] is not None]
        parts.append("times within this runner's " + (f"{max(mdes):.0f} % MDE" if mdes else "threshold (MDE unknown)"))
    return "; ".join(parts) if parts else f"{candidate}: nothing gated was judged"


def markdown(rows, reasons, baseline, candidate, service, threshold, metrics, confirmed, page):
    out = []
    ok = not reasons and not any(r["verdict"] in FAILING for r in rows)
    out.append(f"## Regression gate: {'PASS' if ok else 'FAIL'}\n")
    out.append(headline(rows, candidate, service) + ".\n" if rows else "")
    for why in reasons:
        out.append(f"**Cannot be judged**: {why}.\n")
    kinds = {"regressed (confirmed)": "regressed", "cannot be judged": "cannot", "not gated": "not",
             "not repeated": "unchanged"}
    counts = {k: sum(1 for r in rows if kinds.get(r["verdict"], r["verdict"]) == k)
              for k in ("improved", "regressed", "unchanged", "unstable", "cannot", "not")}
    out.append(f"{counts['regressed']} regressed, {counts['unstable']} unstable, {counts['improved']} improved, "
               f"{counts['unchanged']} unchanged, {counts['cannot']} cannot be judged"
               + (f", {counts['not']} shown but not gated" if counts["not"] else "") + f" — `{candidate}` against "
               f"`{baseline}`, gated on {', '.join(metrics)}.\n")
    out.append("Both builds ran in one job, interleaved (A B A B), paired on rounds. Counted metrics regress past "
               f"the larger of their A/A MDE in this run and {COUNTED_FLOOR_PCT:g} %"
               + (", confirmed by a second run in fresh processes in the other order" if confirmed else "")
               + f"; times past both THRESHOLD_PCT ({threshold:g} %) and their MDE.\n")
    if rows:
        out.append("| cell | metric | change [95 % CI] | MDE | threshold | verdict | why this threshold |")
        out.append("|---|---|---|---|---|---|---|")
        for r in rows:
            ci = "" if r["ci95_low_pct"] is None else f" [{r['ci95_low_pct']:+.2f}, {r['ci95_high_pct']:+.2f}]"
            conf = f"; again {pct(r.get('confirm_change_pct'), 2)}" if "confirm_change_pct" in r else ""
            mde = "–" if r["mde_pct"] is None else f"{r['mde_pct']:.2f} %"
            thr = "–" if r["threshold_pct"] is None else f"{r['threshold_pct']:.2f} %"
            verdict = f"**{r['verdict']}** ✗" if r["verdict"] in FAILING else r["verdict"]
            out.append(f"| {r['cell']} | {LABELS.get(r['metric'], r['metric'])} | {pct(r['change_pct'], 2)}{ci}{conf} | {mde} | {thr} | {verdict} | {r['why']} |")
        out.append("")
    if page:
        out.append(f"The run, every metric: {page}\n")
    return "\n".join(out), ok


def main(argv):
    p = argparse.ArgumentParser(add_help=True)
    p.add_argument("--json")
    p.add_argument("--confirm")
    p.add_argument("--page")
    p.add_argument("results")
    p.add_argument("baseline")
    p.add_argument("candidate")
    p.add_argument("threshold")
    p.add_argument("metrics")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        threshold = parse_threshold(a.threshold)
        metrics = parse_metrics(a.metrics)
        res = load(a.results)
        rows, reasons = judge_run(res, a.baseline, a.candidate, threshold, metrics)
        confirmed = False
        if a.confirm:
            rows2, reasons2 = judge_run(load(a.confirm), a.baseline, a.candidate, threshold, metrics)
            confirm(rows, rows2)
            confirmed = True
    except BadInput as e:
        print(f"gate: {e}", file=sys.stderr)
        return 2
    if not rows and not reasons:
        reasons.append(f"none of the gated metrics ({', '.join(metrics)}) was measured")
    service = a.candidate.split("@")[0]
    text, ok = markdown(rows, reasons, a.baseline, a.candidate, service, threshold, metrics, confirmed, a.page)
    print(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"schema_version": 1, "pass": ok, "headline": headline(rows, a.candidate, service) if rows else None,
                       "reasons": reasons, "baseline": a.baseline, "candidate": a.candidate,
                       "threshold_pct": threshold, "counted_floor_pct": COUNTED_FLOOR_PCT,
                       "metrics": metrics, "confirmed": confirmed, "rows": rows}, f, indent=2)
            f.write("\n")
    if ok:
        return 0
    if not confirmed and any(r["verdict"] == "regressed" for r in rows):
        return EXIT_CONFIRM
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
