#!/usr/bin/env python3
"""The regression gate's verdict (scripts/gate.sh), from one run's results.json and, when a
counted regression was measured again in fresh processes, the confirming run's.

Three arms, as each metric's definition names it (`gate`, in the table results.json records):
- counted (exact counts): regressed when the change is costlier, its interval (the runner's
  paired one: `verdicts` in results.json, CANDIDATE against BASELINE) excludes 0, and it
  exceeds the larger of the metric's A/A MDE in this run and COUNTED_FLOOR_PCT. Counted
  changes are exact enough that the runner's 2 % "no change" band would hide a real 1 % one.
- absolute (a count whose base is about 0: a relative change of 0 is none): regressed when
  the head's median is more than the definition's `gate_floor` per request above the base's
  and every head repetition above every base one.
- time: regressed when the runner's verdict is "worse" and the change exceeds both
  THRESHOLD_PCT and the metric's A/A MDE in this run (a change the run cannot tell from noise
  never fails it).
A definition's `gate_loads` (and `gate_level`) say in which cells its arm judges it.

A regression of any arm fails the gate only when the confirming run (fresh processes, the
other order, fewer rounds) sees it again — worse past the first run's threshold, its interval
excluding 0. A count that does not repeat is "unstable", which fails as well, never passes; a
time that does not repeat is "not repeated" (the noise its MDE describes), shown, not failed. Prints Markdown (the job summary); --json writes the same verdicts as data.

A counted change whose interval excludes 0 and exceeds its A/A MDE but not the floor is "real,
under the floor": reported with its interval and absolute counts, never "unchanged", and not
failed. Where both cells counted instructions per function (results.json `counted`), the
report says where the change went: the functions whose instructions per request moved most,
with their crates, and with --crate NAME (a patched dependency) that crate's own
instructions per request are an arm of their own (a change inside a crate that is a quarter of
the service is a finding even when the service moves a quarter as much).

usage: gate_verdict.py [--json OUT] [--confirm RESULTS_JSON] [--page URL] [--crate NAME]
                       RESULTS_JSON BASELINE CANDIDATE THRESHOLD_PCT METRICS
METRICS: comma-separated, from the keys of metrics.json (beside this file: the runner's metric
definitions) that a counted or absolute arm judges, and `time` (every metric of the time arm).
Only a complete run is judged: its status `completed` and every planned cell of BASELINE and
CANDIDATE (run.json's plan, beside each results.json) ended ok with repetitions measured, and
each planned A/A arm has its calibration; otherwise it "cannot be judged", saying why.
exit: 0 pass; 1 fail (a regression, an unstable one, an incomplete run, or a gated metric
that cannot be judged); 2 bad input; 3 a regression to confirm (only without --confirm).
"""

import argparse
import json
import math
import os
import sys

# The metrics, as the runner defines them (`results::metric::DEFINITIONS`): the run's own
# results.json records the table it was measured with (`metrics`) and the verdict reads that;
# metrics.json beside this file is the same table, generated and held equal by a runner test,
# for checking GATE_METRICS before any run exists. A metric gated there is gated here, with its
# label, its arm, where a cell keeps its value and in which cells it applies.
DEFINITIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics.json")
# The patched crate's own instructions per request (--crate): judged like a count, not a name
# GATE_METRICS takes (it exists only for a patch; it extends the metric the table marks
# `attributed`, counted per function and crate).
CRATE_METRIC = "crate_instructions_per_request"
# Rows of the per-function table.
TOP_FUNCTIONS = 10
ARMS = ("counted", "absolute", "time")


class Table:
    """The metric definitions, by key, in the table's order."""

    def __init__(self, defs, where):
        if not isinstance(defs, list) or not defs:
            raise BadInput(f"{where}: no metric definitions (a runner older than the gate's verdict?)")
        self.defs = {}
        for d in defs:
            if not isinstance(d, dict) or not isinstance(d.get("key"), str) or not isinstance(d.get("label"), str):
                raise BadInput(f"{where}: a metric definition without a key or label")
            if d.get("gate") is not None and d.get("gate") not in ARMS:
                raise BadInput(f"{where}: metric {d['key']!r} has an unknown gate arm {d.get('gate')!r}")
            self.defs[d["key"]] = d

    def label(self, name):
        return (self.defs.get(name) or {}).get("label", name)

    def names(self):
        """What GATE_METRICS takes: each count by name, every time by `time`."""
        return [k for k, d in self.defs.items() if d.get("gate") in ("counted", "absolute")] + ["time"]

    def applies(self, name, model, level):
        d = self.defs.get(name) or {}
        return model in (d.get("gate_loads") or []) and d.get("gate_level") in (None, level)

    def times(self, model, level):
        return [k for k, d in self.defs.items() if d.get("gate") == "time" and self.applies(k, model, level)]

    def summary(self, name):
        return tuple((self.defs.get(name) or {}).get("summary") or ())

    def attributed(self):
        return next((k for k, d in self.defs.items() if d.get("attributed")), None)


def beside():
    """The table beside this file (metrics.json)."""
    try:
        with open(DEFINITIONS_FILE, encoding="utf-8") as f:
            return Table(json.load(f), DEFINITIONS_FILE)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot read {DEFINITIONS_FILE}: {e}") from None


REAL = "real, under the floor"
# Below this a counted change is not gated, however exact: a service's count moves by that much
# with how its requests happen to batch (a few syscalls in thousands of requests).
COUNTED_FLOOR_PCT = 0.5
EXIT_CONFIRM = 3
# The verdicts that fail the gate; of them, the findings (a regression seen, once or twice).
FAILING = ("regressed", "regressed (confirmed)", "unstable", "cannot be judged")
FOUND = ("regressed", "regressed (confirmed)", "unstable")


class BadInput(Exception):
    pass


def parse_metrics(text, table=None):
    valid = (table or beside()).names()
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in valid]
    if unknown or not names:
        raise BadInput(
            f"unknown gated metric(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"valid: {', '.join(valid)}"
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


def run_record(results_path):
    """run.json beside results.json: what was planned, and what the sides were built from."""
    return load(os.path.join(os.path.dirname(os.path.abspath(results_path)), "run.json"))


def plan_of(results_path):
    """The planned cells of the run (run.json beside results.json): the gate judges a complete
    run only, so what was planned is read from the run's record, not from what was written."""
    path = os.path.join(os.path.dirname(os.path.abspath(results_path)), "run.json")
    plan = run_record(results_path).get("plan")
    if not isinstance(plan, list) or not all(isinstance(c, dict) for c in plan):
        raise BadInput(f"{path}: no plan (a list of cells)")
    return plan


def incomplete(res, plan, baseline, candidate, which):
    """Why the run `which` is not complete: it did not finish, or a planned cell of either
    side (or its A/A arm) did not end measured. A missing or failed cell has no verdict, so
    judging the rest would pass a head whose cell failed."""
    reasons = []
    if res.get("status") != "completed":
        reasons.append(f"the {which} run did not finish (status {res.get('status')!r}): "
                       "an interrupted or partial run is not judged")
    cells = {c.get("key"): c for c in res.get("cells") or [] if isinstance(c, dict)}
    cal = res.get("calibration") if isinstance(res.get("calibration"), dict) else {}
    calibrated = {(c.get("scenario"), c.get("level"), c.get("profile"))
                  for c in cal.get("cells") or [] if isinstance(c, dict)}
    for spec in plan:
        if spec.get("service") not in (baseline, candidate):
            continue
        label = f'{spec.get("service")} at {spec.get("scenario")}/{spec.get("level")}/{spec.get("profile")}'
        if spec.get("arm") is not None:
            if (spec.get("scenario"), spec.get("level"), spec.get("profile")) not in calibrated:
                reasons.append(f"the {which} run's A/A calibration of {label} (arm {spec.get('arm')}) has no result")
            continue
        c = cells.get(spec.get("key"))
        n = c.get("n") if c else None
        if c is None:
            reasons.append(f"the {which} run has no result for {label}")
        elif c.get("status") != "ok" or not isinstance(n, int) or n < 1:
            reasons.append(f"the {which} run's cell {label} did not end measured: {c.get('status')}: "
                           f"{c.get('failure') or 'no reason recorded'}")
    # Several reasons of one run are one finding: say the first few.
    return reasons[:3] + ([f"and {len(reasons) - 3} more"] if len(reasons) > 3 else [])


def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def dig(obj, path):
    for k in path:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def median_of(cell, path):
    return num(dig(cell, path + ("median",)))


def crate_key(name):
    """A crate as its symbols spell it (`tokio-util` → `tokio_util`)."""
    return (name or "").replace("-", "_")


def crate_stat(cell, name):
    for entry in dig(cell, ("counted", "instruction_crates")) or []:
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == crate_key(name) and isinstance(entry[1], dict):
            return entry[1]
    return None


def functions_of(cell):
    out = {}
    for f in dig(cell, ("counted", "instruction_functions")) or []:
        if isinstance(f, dict) and isinstance(f.get("function"), str) and num(f.get("per_request")) is not None:
            out[f["function"]] = (str(f.get("crate") or "?"), f["per_request"])
    return out


def function_diff(base, head, total_delta):
    """The functions whose instructions per request moved most between two cells, largest
    change first: (function, crate, base, head, delta, share of the total delta)."""
    fb, fh = functions_of(base), functions_of(head)
    rows = []
    for name in {*fb, *fh}:
        crate = (fh.get(name) or fb.get(name))[0]
        b, h = fb.get(name, (crate, None))[1], fh.get(name, (crate, None))[1]
        d = (h or 0.0) - (b or 0.0)
        if abs(d) >= 0.5:
            share = d / total_delta if total_delta else None
            rows.append({"function": name, "crate": crate, "base": b, "head": h, "delta": d, "share": share})
    rows.sort(key=lambda r: (-abs(r["delta"]), r["function"]))
    return rows


def judge_run(res, baseline, candidate, threshold, metrics, crate=None):
    """Rows (one per cell and gated metric) and the reasons nothing could be judged, by the
    metric definitions the run recorded."""
    try:
        table = Table(res.get("metrics"), "results.json")
    except BadInput as e:
        return [], [str(e)]
    cells = {c.get("key"): c for c in res.get("cells") or [] if isinstance(c, dict)}
    cal = res.get("calibration") if isinstance(res.get("calibration"), dict) else {}
    calibrated = {f'{c.get("scenario")}/{c.get("level")}/{c.get("profile")}'
                  for c in cal.get("cells") or [] if isinstance(c, dict)}
    attributed = table.attributed()
    rows = []
    seen = False
    for v in res.get("verdicts") or []:
        if not isinstance(v, dict) or v.get("baseline") != baseline or v.get("service") != candidate:
            continue
        seen = True
        cell = cells.get(v.get("key"), {})
        model = "open" if cell.get("offered_rate_per_s") is not None else "closed"
        level = v.get("level")
        label = f'{v.get("scenario", "")}/{v.get("level", "")}/{v.get("profile", "")}'
        by_name = {m.get("metric"): m for m in v.get("metrics") or [] if isinstance(m, dict)}
        base_cell = next((c for c in cells.values() if c.get("service") == baseline
                          and (c.get("scenario"), c.get("level"), c.get("profile"))
                          == (v.get("scenario"), v.get("level"), v.get("profile"))), {})
        wanted = [m for m in metrics if m != "time" and table.applies(m, model, level)]
        if "time" in metrics:
            wanted += table.times(model, level)
        for name in wanted:
            d = table.defs[name]
            arm, path = d["gate"], table.summary(name)
            if arm == "absolute":
                r = judge_absolute(label, name, dig(base_cell, path), dig(cell, path), d.get("gate_floor") or 0.0)
            elif by_name.get(name) is None:
                r = row(label, name, arm, None, None, "cannot be judged", "not measured in this cell (results.md says why)")
            else:
                # A count that varied past its exact CV between repetitions of one binary here
                # (open-loop syscalls batch with timing) follows time: judged as a time is.
                exact_cv = num(d.get("exact_cv"))
                inexact = arm == "counted" and exact_cv is not None and any(
                    (num(dig(c, path + ("cv",))) or 0.0) > exact_cv for c in (base_cell, cell))
                r = judge_metric(label, name, "time" if inexact else arm, by_name[name], threshold)
                if inexact:
                    r.update(arm="counted", exact=False)
                    r["why"] = (f"not exact here (CV over {100 * exact_cv:g} % between repetitions): judged as a "
                                "time, " + r["why"])
                if arm == "counted":
                    r["base_value"] = median_of(base_cell, path)
                    r["head_value"] = median_of(cell, path)
                if name == attributed and r["base_value"] is not None and r["head_value"] is not None:
                    r["functions"] = function_diff(base_cell, cell, r["head_value"] - r["base_value"])
                if arm == "counted" and label not in calibrated and r["verdict"] != "cannot be judged":
                    # Its threshold would be the floor alone, below what batching moves it by.
                    r["verdict"], r["threshold_pct"] = "not gated", None
                    r["why"] = "no A/A of this cell in this run"
            r.update(label=d["label"], higher_is_better=bool(d.get("higher_is_better")))
            rows.append(r)
        if crate and attributed in metrics and table.applies(attributed, model, level):
            r = judge_crate(label, crate, crate_stat(base_cell, crate), crate_stat(cell, crate))
            rows.append(r | {"label": f"{table.label(attributed)} inside {crate}"})
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


def row(cell, metric, arm, d, threshold, verdict, why, mde=None):
    return {
        "cell": cell,
        "metric": metric,
        "arm": arm,
        "base_value": None,
        "head_value": None,
        "change_pct": num((d or {}).get("change_pct")),
        "ci95_low_pct": num((d or {}).get("ci95_low_pct")),
        "ci95_high_pct": num((d or {}).get("ci95_high_pct")),
        "mde_pct": num(mde),
        "threshold_pct": num(threshold),
        "verdict": verdict,
        "why": why,
    }


def span(b, h):
    """The change between two sides' ranges over their repetitions, every head repetition
    against every base one: (head min − base max, head max − base min), None where a bound is
    missing."""
    def edge(x, y):
        x, y = num((h or {}).get(x)), num((b or {}).get(y))
        return None if x is None or y is None else x - y
    return edge("min", "max"), edge("max", "min")


def judge_crate(cell, crate, b, h):
    """The patched crate's own instructions per request, base against head: the change of the
    medians, its interval from the two sides' ranges over their repetitions (every head
    repetition against every base one), judged against the counted floor."""
    name = CRATE_METRIC
    bm, hm = num((b or {}).get("median")), num((h or {}).get("median"))
    if bm is None or hm is None or bm <= 0:
        why = (f"no instructions of crate {crate} counted on " + ("either side" if bm is None and hm is None
               else "the base" if bm is None else "the head" if hm is None else "the base (0)"))
        return row(cell, name, "counted", None, None, "cannot be judged", why) | {"crate": crate}
    lo, hi = (None if x is None else x / bm * 100 for x in span(b, h))
    d = {"change_pct": (hm - bm) / bm * 100, "ci95_low_pct": lo, "ci95_high_pct": hi}
    r = row(cell, name, "counted", d, COUNTED_FLOOR_PCT, "unchanged",
            f"floor {COUNTED_FLOOR_PCT:g} % of the crate's own instructions; the interval spans every repetition of both sides")
    change = d["change_pct"]
    if lo is not None and hi is not None:
        if change > COUNTED_FLOOR_PCT and lo > 0:
            r["verdict"] = "regressed"
        elif change < -COUNTED_FLOOR_PCT and hi < 0:
            r["verdict"] = "improved"
        elif lo > 0 or hi < 0:
            r["verdict"] = REAL
    r.update(crate=crate, base_value=bm, head_value=hm)
    return r


def judge_absolute(cell, name, b, h, floor):
    """A count whose base is about 0, base against head: the change of the medians per request,
    its interval from the two sides' ranges over their repetitions (every head repetition
    against every base one), failing past `floor` per request. A relative change is shown
    where the base is not 0."""
    bm, hm = num((b or {}).get("median")), num((h or {}).get("median"))
    if bm is None or hm is None:
        why = ("not counted on " + ("either side" if bm is None and hm is None else "the base" if bm is None
               else "the head") + " (a run without the exact count: results.md says why)")
        return row(cell, name, "absolute", None, None, "cannot be judged", why)
    lo, hi = span(b, h)
    delta = hm - bm
    rel = {"change_pct": delta / bm * 100 if bm > 0 else None,
           "ci95_low_pct": lo / bm * 100 if bm > 0 and lo is not None else None,
           "ci95_high_pct": hi / bm * 100 if bm > 0 and hi is not None else None}
    r = row(cell, name, "absolute", rel, None, "unchanged",
            f"absolute floor {floor:g} per request (the base is about 0: a relative change says nothing); "
            "the interval spans every repetition of both sides")
    r.update(base_value=bm, head_value=hm, change_abs=delta, low_abs=lo, high_abs=hi, floor_abs=floor)
    if lo is None or hi is None:
        r["verdict"], r["why"] = "cannot be judged", "no range (fewer than two repetitions on a side)"
    elif delta > floor and lo > 0:
        r["verdict"] = "regressed"
    elif delta < -floor and hi < 0:
        r["verdict"] = "improved"
    return r


def judge_metric(cell, name, arm, m, threshold):
    d = m.get("difference")
    mde = num(m.get("mde_pct"))
    if not isinstance(d, dict) or num(d.get("change_pct")) is None:
        return row(cell, name, arm, None, None, "cannot be judged", "no interval (fewer than two repetitions on a side)", mde)
    change, low, high = num(d.get("change_pct")), num(d.get("ci95_low_pct")), num(d.get("ci95_high_pct"))
    if low is None or high is None:
        return row(cell, name, arm, d, None, "cannot be judged", "no interval", mde)
    if arm == "counted":
        bar = max(COUNTED_FLOOR_PCT, mde or 0.0)
        why = (f"A/A MDE of this metric in this run ({mde:.2f} %)" if mde is not None and mde >= COUNTED_FLOOR_PCT
               else f"floor {COUNTED_FLOOR_PCT:g} % (A/A MDE {'%.3f %%' % mde if mde is not None else 'unknown'})")
        if change > bar and low > 0:
            verdict = "regressed"
        elif change < -bar and high < 0:
            verdict = "improved"
        elif mde is not None and (low > 0 or high < 0) and abs(change) > mde:
            # Exact enough to be sure of, too small to fail on: said as what it is.
            verdict = REAL
            why = (f"real: its interval excludes 0 and it exceeds the A/A MDE ({mde:.3f} %); "
                   f"under the {bar:g} % gate floor: not failed")
        else:
            verdict = "unchanged"
        return row(cell, name, arm, d, bar, verdict, why, mde)
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
    return row(cell, name, arm, d, bar, verdict, why, mde)


def repeats(r, r2):
    """Whether the confirming run's row `r2` sees `r`'s regression again: worse past the first
    run's threshold, its interval excluding 0. The first run's threshold, because the
    confirming run has fewer rounds and so a wider MDE of its own."""
    if r["arm"] == "absolute":
        return bool(r2) and r2.get("change_abs") is not None and r2.get("low_abs") is not None \
            and r2["change_abs"] > r["floor_abs"] and r2["low_abs"] > 0
    if not r2 or r2["change_pct"] is None or r2["ci95_low_pct"] is None:
        return False
    if r.get("higher_is_better"):  # req/s: less is worse
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
        if r["arm"] == "absolute":
            r["confirm_change_abs"] = r2.get("change_abs") if r2 else None
        if repeats(r, r2):
            r["verdict"] = "regressed (confirmed)"
        elif r["arm"] == "time" or r.get("exact") is False:
            # A time (or a count that follows time) that moved once past a wide MDE and not
            # again is the noise the MDE describes: shown, not failed. An exact count that
            # does not repeat is a finding.
            r["verdict"] = "not repeated"
        else:
            r["verdict"] = "unstable"
            r["why"] += "; the confirming run " + (
                f"measured {r2['change_abs']:+.3f} per request ({r2['verdict']})" if r["arm"] == "absolute" and r2
                and r2.get("change_abs") is not None
                else f"measured {r2['change_pct']:+.2f} % ({r2['verdict']})" if r2 and r2["change_pct"] is not None
                else "could not judge it")


def pct(x, digits=1):
    return "–" if x is None else f"{x:+.{digits}f} %"


def label(r):
    return r.get("label") or r["metric"]


def amount(x):
    """A per-request count as the runner prints it: thousands separated, decimals where small."""
    if x is None:
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:,.3f}" if abs(x) < 10 else f"{x:,.1f}"


def counts(r):
    """` (2,188 → 2,354, +166)`: the absolute counts behind a counted change, where known."""
    b, h = r.get("base_value"), r.get("head_value")
    if b is None or h is None:
        return ""
    d = h - b
    # Whole counts where the counts are large; small ones (page faults) to the decimals they show.
    delta = f"{d:+,.0f}" if max(abs(b), abs(h)) >= 100 and abs(d) >= 1 else f"{d:+.3f}"
    return f" ({amount(b)} → {amount(h)}, {delta})"


def change(r):
    """A row's change as the table gives it: per request for an absolute count, else percent."""
    if r["arm"] == "absolute" and r.get("change_abs") is not None:
        rng = f" [{r['low_abs']:+.3f}, {r['high_abs']:+.3f}]" if r.get("low_abs") is not None else ""
        return f"{r['change_abs']:+.3f}/request{rng}"
    return pct(r["change_pct"], 2) + interval(r)


def interval(r):
    if r["ci95_low_pct"] is None or r["ci95_high_pct"] is None:
        return ""
    return f" [{r['ci95_low_pct']:+.2f}, {r['ci95_high_pct']:+.2f}]"


def headline(rows, candidate, service):
    counted = [r for r in rows if r["arm"] in ("counted", "absolute")]
    parts = []
    for r in rows:
        if r["verdict"] in FOUND:
            word = "moves" if r["arm"] == "time" else "costs"
            extra = " (unstable: not repeated)" if r["verdict"] == "unstable" else ""
            digits = 1 if r["arm"] == "time" else 2
            size = f"{r['change_abs']:+.3f}" if r["arm"] == "absolute" else pct(r['change_pct'], digits)
            parts.append(f"head {word} {size} {label(r)}{counts(r)} on {service} at {r['cell']}{extra}")
    for r in counted:
        if r["verdict"] == REAL:
            parts.append(f"{label(r)} {pct(r['change_pct'], 2)}{interval(r)}{counts(r)} at {r['cell']}: real, "
                         f"under the {r['threshold_pct']:g} % gate floor: not failed")
    for name in dict.fromkeys(r["metric"] for r in counted):
        mine = [r for r in counted if r["metric"] == name]
        mine = [r for r in mine if r["verdict"] != "not gated"]
        word = (label(mine[0]) if mine else "").split('/')[0]
        if mine and all(r["verdict"] == "unchanged" for r in mine):
            parts.append(f"{word} unchanged")
        elif mine and any(r["verdict"] == "improved" for r in mine) and not any(
                r["verdict"] in FOUND for r in mine):
            parts.append(f"{word} improved")
    time = [r for r in rows if r["arm"] == "time"]
    for r in rows:
        if r["verdict"] == "not repeated":
            parts.append(f"{label(r)} at {r['cell']} moved {pct(r['change_pct'])} once, not again (noise)")
    if time and all(r["verdict"] in ("unchanged", "not repeated") for r in time):
        mdes = [r["mde_pct"] for r in time if r["mde_pct"] is not None]
        parts.append("times within this runner's " + (f"{max(mdes):.0f} % MDE" if mdes else "threshold (MDE unknown)"))
    return "; ".join(parts) if parts else f"{candidate}: nothing gated was judged"


def plain(text):
    """Text from a result set or the user, safe inside Markdown: no markup, no line breaks."""
    return "".join("'" if c == "`" else "¦" if c == "|" else " " if c in "\r\n\t" or not c.isprintable()
                   else "\\" + c if c in "*_[]<>#\\" else c for c in str(text))


def code(text):
    """Text from a result set or the user as the inside of a code span in a table cell: no
    backtick or pipe to end it, no line break."""
    return "".join("'" if c == "`" else "¦" if c == "|" else " " if not c.isprintable() else c for c in str(text))


def compared(run, baseline, candidate, crate):
    """`httparse 19b5fc7 (v1.10.1) → 1a4f94e (pr-alloc)`: what the two sides were built from,
    from run.json's variant records; None when it does not record them."""
    variants = {v.get("service"): v for v in dig(run, ("environment", "variants")) or [] if isinstance(v, dict)}
    b, h = variants.get(baseline), variants.get(candidate)
    if not b or not h:
        return None

    def side(v):
        p = (v.get("patches") or {}).get(crate) if crate else None
        if isinstance(p, dict):
            commit, spelled = p.get("commit"), p.get("rev") or p.get("path")
        else:
            commit, spelled = v.get("commit"), v.get("rev")
        c = str(commit)[:7] if commit else "no commit"
        return f"`{code(c)}`" + (f" ({plain(spelled)})" if spelled and spelled != commit else "")

    service = f"`{code(baseline.split('@')[0])}`"
    if crate:
        return f"crate `{code(crate)}`: {side(b)} → {side(h)}, in {service}"
    return f"{service}: {side(b)} → {side(h)}" + (" (head with its own arguments)" if b.get("commit") == h.get("commit") else "")


def function_table(r, out):
    rows = r.get("functions")
    if not rows:
        return
    total = r["head_value"] - r["base_value"]
    shown = rows[:TOP_FUNCTIONS]
    out.append(f"### Where {label(r)} moved at {r['cell']}{counts(r)}\n")
    out.append("| function | crate | base | head | Δ/request | share of Δ |")
    out.append("|---|---|---:|---:|---:|---:|")
    for f in shown:
        share = "–" if f["share"] is None else f"{100 * f['share']:.0f} %"
        out.append(f"| `{code(f['function'])}` | `{code(f['crate'])}` | {amount(f['base'])} | {amount(f['head'])} | "
                   f"{f['delta']:+,.1f} | {share} |")
    s = sum(f["delta"] for f in shown)
    cover = f" ({100 * s / total:.0f} % of {total:+,.1f})" if total else ""
    out.append(f"\nThese {len(shown)} of {len(rows)} functions that moved by 0.5 or more a request add up to "
               f"{s:+,.1f} instructions per request{cover}. Functions are cachegrind's, per request by the same "
               "two-run slope as the total; inlined code is counted in the function it was inlined into.\n")


def markdown(rows, reasons, baseline, candidate, service, threshold, metrics, confirmed, page, what=None):
    out = []
    ok = not reasons and not any(r["verdict"] in FAILING for r in rows)
    out.append(f"## Regression gate: {'PASS' if ok else 'FAIL'}\n")
    if what:
        out.append(f"{what}.\n")
    out.append(headline(rows, candidate, service) + ".\n" if rows else "")
    for why in reasons:
        out.append(f"**Cannot be judged**: {why}.\n")
    kinds = {"regressed (confirmed)": "regressed", "cannot be judged": "cannot", "not gated": "not",
             "not repeated": "unchanged", REAL: "real"}
    tally = {k: sum(1 for r in rows if kinds.get(r["verdict"], r["verdict"]) == k)
             for k in ("improved", "regressed", "unchanged", "unstable", "cannot", "not", "real")}
    out.append(f"{tally['regressed']} regressed, {tally['unstable']} unstable, {tally['improved']} improved, "
               + (f"{tally['real']} real but under the floor, " if tally["real"] else "")
               + f"{tally['unchanged']} unchanged, {tally['cannot']} cannot be judged"
               + (f", {tally['not']} shown but not gated" if tally["not"] else "") + f" — `{candidate}` against "
               f"`{baseline}`, gated on {', '.join(metrics)}.\n")
    out.append("Both builds ran in one job, interleaved (A B A B), paired on rounds. Counted metrics regress past "
               f"the larger of their A/A MDE in this run and {COUNTED_FLOOR_PCT:g} %"
               + (", confirmed by a second run in fresh processes in the other order" if confirmed else "")
               + "; page faults past an absolute floor per request"
               + f"; times (req/s at c1 and c64, open-loop CPU/request and p50/p99 latency) past both "
               f"THRESHOLD_PCT ({threshold:g} %) and their MDE.\n")
    if rows:
        out.append("| cell | metric | base → head | change [95 % CI] | MDE | threshold | verdict | why this threshold |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in rows:
            conf = (f"; again {r['confirm_change_abs']:+.3f}/request" if r.get("confirm_change_abs") is not None
                    else f"; again {pct(r.get('confirm_change_pct'), 2)}" if "confirm_change_pct" in r else "")
            mde = "–" if r["mde_pct"] is None else f"{r['mde_pct']:.3f} %"
            thr = (f"{r['floor_abs']:g}/request" if r.get("floor_abs") is not None
                   else "–" if r["threshold_pct"] is None else f"{r['threshold_pct']:.2f} %")
            verdict = f"**{r['verdict']}** ✗" if r["verdict"] in FAILING else r["verdict"]
            ab = counts(r)[2:-1] if counts(r) else "–"
            out.append(f"| {r['cell']} | {plain(label(r))} | {ab} | {change(r)}{conf} | {mde} | {thr} | {verdict} | {r['why']} |")
        out.append("")
        for r in rows:
            function_table(r, out)
    if page:
        out.append(f"The run, every metric: {page}\n")
    return "\n".join(out), ok


def main(argv):
    p = argparse.ArgumentParser(add_help=True)
    p.add_argument("--json")
    p.add_argument("--confirm")
    p.add_argument("--page")
    p.add_argument("--crate")
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
        if a.crate is not None and not a.crate.replace("-", "_").isidentifier():
            raise BadInput(f"--crate must be a crate name, got {a.crate!r}")
        rows, reasons = judge_run(res, a.baseline, a.candidate, threshold, metrics, a.crate)
        reasons += incomplete(res, plan_of(a.results), a.baseline, a.candidate, "first")
        run = run_record(a.results)
        confirmed = False
        if a.confirm:
            res2 = load(a.confirm)
            rows2, reasons2 = judge_run(res2, a.baseline, a.candidate, threshold, metrics, a.crate)
            confirm(rows, rows2)
            reasons += incomplete(res2, plan_of(a.confirm), a.baseline, a.candidate, "confirming")
            confirmed = True
    except BadInput as e:
        print(f"gate: {e}", file=sys.stderr)
        return 2
    if not rows and not reasons:
        reasons.append(f"none of the gated metrics ({', '.join(metrics)}) was measured")
    service = a.candidate.split("@")[0]
    what = compared(run, a.baseline, a.candidate, a.crate)
    text, ok = markdown(rows, reasons, a.baseline, a.candidate, service, threshold, metrics, confirmed, a.page, what)
    print(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"schema_version": 1, "pass": ok, "headline": headline(rows, a.candidate, service) if rows else None,
                       "compared": what, "crate": a.crate,
                       "reasons": reasons, "baseline": a.baseline, "candidate": a.candidate,
                       "threshold_pct": threshold, "counted_floor_pct": COUNTED_FLOOR_PCT,
                       "metrics": metrics, "confirmed": confirmed, "rows": rows}, f, indent=2)
            f.write("\n")
    if ok:
        return 0
    # An incomplete run is not worth confirming: it fails as it is.
    if not confirmed and not reasons and any(r["verdict"] == "regressed" for r in rows):
        return EXIT_CONFIRM
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
