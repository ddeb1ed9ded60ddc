#!/usr/bin/env python3
"""Tests of the gate's verdict (gate_verdict.py) on made-up results.json files: which arm
decides, confirmation, what cannot be judged, bad input. Run: python3 -m unittest
discover -s scripts/lib -p 'test_*.py' (scripts/test.sh does)."""

import contextlib
import io
import json
import os
import tempfile
import unittest

import gate_verdict as g

BASE, HEAD = "svc@base", "svc@head"
# The runner's metric definitions, as a run's results.json records them.
with open(g.DEFINITIONS_FILE, encoding="utf-8") as _f:
    DEFINITIONS = json.load(_f)


def metric(name, change, half=0.05, mde=0.1, verdict="no_change"):
    d = None if change is None else {
        "ratio": 1 + change / 100, "change_pct": change, "ci95_low_pct": change - half,
        "ci95_high_pct": change + half, "df": 5.0, "paired": True}
    return {"metric": name, "difference": d, "verdict": verdict, "mde_pct": mde}


def results(level_metrics, cells_status="ok"):
    cells, verdicts = [], []
    for level, ms in level_metrics.items():
        key = f"{HEAD}__ping__{level}__pinned"
        cells.append({"key": key, "service": HEAD, "scenario": "ping", "level": level, "profile": "pinned",
                      "status": cells_status, "n": 5 if cells_status == "ok" else 0, "offered_rate_per_s": None,
                      "failure": None if cells_status == "ok" else "startup: no 200"})
        if ms is not None:
            verdicts.append({"key": key, "service": HEAD, "baseline": BASE, "scenario": "ping",
                             "level": level, "profile": "pinned", "metrics": ms})
    cal = {"service": BASE, "cells": [{"scenario": "ping", "level": lv, "profile": "pinned"} for lv in level_metrics]}
    return {"status": "completed", "cells": cells, "verdicts": verdicts, "calibration": cal, "metrics": DEFINITIONS}


def plan_of(res):
    """run.json's plan of a made-up run: its cells, as planned."""
    return [{k: c.get(k) for k in ("key", "service", "scenario", "level", "profile")}
            for c in res.get("cells") or []]


QUIET = [metric("requests_per_s", 2.0, 10, 19), metric("syscalls_per_request", 0.01, 0.01, 0.01),
         metric("ctx_switches_per_request", -0.1, 0.3, 0.6), metric("instructions_per_request", 0.02, 0.01, 0.1)]


def with_metric(name, m):
    return [m if x["metric"] == name else x for x in QUIET]


def stat(median, spread=0.0):
    return {"n": 3, "median": median, "mean": median, "min": median - spread, "max": median + spread}


def counted(res, level, side, instructions, functions=(), crates=()):
    """Gives `side`'s cell at `level` (adding the base's) a counted summary."""
    svc = {"base": BASE, "head": HEAD}[side]
    key = f"{svc}__ping__{level}__pinned"
    cell = next((c for c in res["cells"] if c["key"] == key), None)
    if cell is None:
        cell = {"key": key, "service": svc, "status": "ok", "n": 5, "offered_rate_per_s": None}
        res["cells"].append(cell)
    cell.update(scenario="ping", level=level, profile="pinned")
    cell["counted"] = {
        "instructions": stat(instructions),
        "instruction_functions": [{"function": f, "crate": c, "per_request": v} for f, c, v in functions],
        "instruction_crates": [[c, stat(v, sp)] for c, v, sp in crates],
    }
    return res


class Gate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, res, plan=None, run=None):
        """A run directory `name` holding results.json and run.json (the plan: `plan`, or the
        run's own cells)."""
        d = os.path.join(self.dir.name, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "run.json"), "w") as f:
            json.dump({"plan": plan_of(res) if plan is None else plan, **(run or {})}, f)
        p = os.path.join(d, "results.json")
        with open(p, "w") as f:
            json.dump(res, f)
        return p

    def run_gate(self, res, *extra, metrics="syscalls_per_request,ctx_switches_per_request,instructions_per_request,time",
                 threshold="5", run=None):
        out, err = io.StringIO(), io.StringIO()
        j = os.path.join(self.dir.name, "gate.json")
        if os.path.exists(j):
            os.remove(j)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = g.main(["--json", j, *extra, self.write("r.json", res, run=run), BASE, HEAD, threshold, metrics])
        data = None
        if os.path.exists(j):
            with open(j) as f:
                data = json.load(f)
        return rc, out.getvalue(), err.getvalue(), data

    def test_a_quiet_head_passes_and_says_why(self):
        rc, md, _, data = self.run_gate(results({"c1": QUIET}))
        self.assertEqual(rc, 0, md)
        self.assertIn("PASS", md)
        self.assertIn("syscalls unchanged; context switches unchanged; instructions unchanged; "
                      "times within this runner's 19 % MDE", md)
        self.assertTrue(data["pass"])

    def test_one_percent_more_instructions_wants_confirming_then_fails(self):
        res = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 1.2, 0.02, 0.1))})
        rc, md, _, _ = self.run_gate(res)
        self.assertEqual(rc, g.EXIT_CONFIRM, md)
        rc, md, _, data = self.run_gate(res, "--confirm", self.write("again.json", res))
        self.assertEqual(rc, 1, md)
        self.assertIn("head costs +1.20 % instructions/request on svc at ping/c1/pinned", md)
        self.assertIn("regressed (confirmed)", md)
        self.assertFalse(data["pass"])

    def test_a_split_write_fails_on_packets_where_the_syscalls_did_not_move(self):
        # --split-write-every 20 on an io_uring service at c64: +5 % packets, syscalls as they were.
        kernel = "packets_per_request,socket_sends_per_request"
        res = results({"c64": QUIET + [metric("packets_per_request", 5.0, 0.01, 0.0),
                                       metric("socket_sends_per_request", 5.0, 0.01, 0.0)]})
        rc, md, _, data = self.run_gate(res, "--confirm", self.write("again.json", res),
                                        metrics="syscalls_per_request," + kernel)
        self.assertEqual(rc, 1, md)
        self.assertIn("head costs +5.00 % packets/request on svc at ping/c64/pinned", md)
        self.assertEqual({r["metric"] for r in data["rows"] if r["verdict"] == "regressed (confirmed)"},
                         set(kernel.split(",")))
        aa = results({"c64": QUIET + [metric("packets_per_request", 0.0, 0.0, 0.0),
                                      metric("socket_sends_per_request", 0.0, 0.0, 0.0)]})
        rc, md, _, _ = self.run_gate(aa, metrics="syscalls_per_request," + kernel)
        self.assertEqual(rc, 0, md)

    def test_a_confirming_run_with_fewer_rounds_confirms_on_the_first_runs_threshold(self):
        first = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 1.09, 0.3, 0.09))})
        # Three rounds: its own MDE (0.88 %) is above the change, yet the change is there.
        again = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 0.87, 0.47, 0.88))})
        rc, md, _, _ = self.run_gate(first, "--confirm", self.write("again.json", again))
        self.assertEqual(rc, 1, md)
        self.assertIn("regressed (confirmed)", md)
        # Under the first run's threshold (0.5 %), or an interval reaching 0: not confirmed.
        for change, half in [(0.4, 0.1), (0.9, 1.0)]:
            again = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", change, half, 0.88))})
            rc, md, _, _ = self.run_gate(first, "--confirm", self.write("again.json", again))
            self.assertEqual(rc, 1, md)
            self.assertIn("unstable", md)

    def test_a_regression_that_does_not_repeat_is_unstable_never_a_pass(self):
        res = results({"c1": with_metric("syscalls_per_request", metric("syscalls_per_request", 1.7, 0.1, 0.01))})
        rc, md, _, _ = self.run_gate(res, "--confirm", self.write("again.json", results({"c1": QUIET})))
        self.assertEqual(rc, 1, md)
        self.assertIn("unstable", md)
        self.assertIn("FAIL", md)

    def test_counted_changes_under_the_floor_or_inside_the_interval_pass(self):
        res = results({"c1": with_metric("syscalls_per_request", metric("syscalls_per_request", 0.4, 0.05, 0.01))})
        self.assertEqual(self.run_gate(res)[0], 0)
        res = results({"c1": with_metric("ctx_switches_per_request", metric("ctx_switches_per_request", 1.0, 1.5, 0.6))})
        self.assertEqual(self.run_gate(res)[0], 0)
        # The A/A MDE, when larger than the floor, is the threshold.
        res = results({"c1": with_metric("ctx_switches_per_request", metric("ctx_switches_per_request", 1.0, 0.2, 2.0))})
        rc, md, _, data = self.run_gate(res)
        self.assertEqual(rc, 0, md)
        row = next(r for r in data["rows"] if r["metric"] == "ctx_switches_per_request")
        self.assertEqual(row["threshold_pct"], 2.0)
        self.assertIn("A/A MDE", row["why"])

    def test_times_fail_only_past_both_threshold_and_mde(self):
        slow = metric("requests_per_s", -12.0, 3, 19, "worse")
        self.assertEqual(self.run_gate(results({"c1": with_metric("requests_per_s", slow)}))[0], 0)
        slow = metric("requests_per_s", -30.0, 5, 19, "worse")
        rc, md, _, _ = self.run_gate(results({"c1": with_metric("requests_per_s", slow)}))
        self.assertEqual(rc, g.EXIT_CONFIRM, md)
        # Confirmed only when the second run is slower past the first run's bar again.
        first = results({"c1": with_metric("requests_per_s", slow)})
        rc, md, _, _ = self.run_gate(first, "--confirm", self.write("again.json", first))
        self.assertEqual(rc, 1, md)
        self.assertIn("regressed (confirmed)", md)
        # A time that moved once and not again is noise: shown, and the gate passes.
        noise = results({"c1": with_metric("requests_per_s", metric("requests_per_s", -3.0, 10, 19, "no_change"))})
        rc, md, _, data = self.run_gate(first, "--confirm", self.write("again.json", noise))
        self.assertEqual(rc, 0, md)
        self.assertIn("req/s at ping/c1/pinned moved -30.0 % once, not again (noise)", md)
        self.assertEqual(next(r for r in data["rows"] if r["metric"] == "requests_per_s")["verdict"], "not repeated")
        # Not gated on time: the same slowdown passes.
        rc, _, _, _ = self.run_gate(results({"c1": with_metric("requests_per_s", slow)}), metrics="syscalls_per_request")
        self.assertEqual(rc, 0)

    def faults(self, res, level, base, head):
        """Gives both sides' cells at `level` their page faults per request (median, min, max)."""
        for svc, st in ((BASE, base), (HEAD, head)):
            key = f"{svc}__ping__{level}__pinned"
            cell = next((c for c in res["cells"] if c["key"] == key), None)
            if cell is None:
                cell = {"key": key, "service": svc, "scenario": "ping", "level": level, "profile": "pinned",
                        "status": "ok", "n": 5, "offered_rate_per_s": None}
                res["cells"].append(cell)
            if st is not None:
                cell.setdefault("counted", {}).setdefault("server", {})["faults"] = \
                    {"n": 5, "median": st[0], "mean": st[0], "min": st[1], "max": st[2]}
        return res

    def test_page_faults_from_a_base_of_zero_fail_on_their_absolute_change(self):
        """F5: two page faults per request (0.0000 → 2.000) passed: instructions +0.27 %,
        syscalls unchanged, CPU/request under its MDE. A base of 0 has no relative change."""
        metrics = "syscalls_per_request,faults_per_request,time"
        res = self.faults(results({"c1": QUIET, "c64": QUIET}), "c64", (0.0, 0.0, 0.0001), (2.0, 1.999, 2.0))
        self.faults(res, "c1", (0.0001, 0.0, 0.0002), (2.0, 2.0, 2.0))
        rc, md, _, _ = self.run_gate(res, metrics=metrics)
        self.assertEqual(rc, g.EXIT_CONFIRM, md)
        rc, md, _, data = self.run_gate(res, "--confirm", self.write("again.json", res), metrics=metrics)
        self.assertEqual(rc, 1, md)
        self.assertIn("head costs +2.000 page faults/request (0.000 → 2.000, +2.000) on svc at ping/c64/pinned", md)
        row = next(r for r in data["rows"] if r["metric"] == "faults_per_request" and r["cell"] == "ping/c64/pinned")
        self.assertEqual((row["verdict"], row["arm"], row["change_pct"]), ("regressed (confirmed)", "absolute", None))
        # A/A: a fault in thousands of requests on both sides, ranges overlapping: unchanged.
        aa = self.faults(results({"c64": QUIET}), "c64", (0.0002, 0.0, 0.0004), (0.0003, 0.0001, 0.0005))
        rc, md, _, _ = self.run_gate(aa, metrics=metrics)
        self.assertEqual(rc, 0, md)
        self.assertIn("page faults unchanged", md)
        # Under the floor, however clear: not failed.
        small = self.faults(results({"c64": QUIET}), "c64", (0.0, 0.0, 0.0), (0.02, 0.02, 0.02))
        self.assertEqual(self.run_gate(small, metrics=metrics)[0], 0)
        # Not counted (a run without the exact count): cannot be judged, never a pass.
        none = self.faults(results({"c64": QUIET}), "c64", None, None)
        rc, md, _, _ = self.run_gate(none, metrics=metrics)
        self.assertEqual(rc, 1, md)
        self.assertIn("not counted on either side", md)
        # A regression the confirming run does not see again is unstable: a failure.
        rc, md, _, _ = self.run_gate(res, "--confirm", self.write("again.json", aa), metrics=metrics)
        self.assertEqual(rc, 1, md)
        self.assertIn("unstable", md)

    def test_throughput_at_c64_is_judged(self):
        """F6: a head doing extra work only when 8 or more connections are ready (c64 req/s
        89k → 54k) passed: the gate ran no concurrency. A c64 cell's req/s is judged like c1's."""
        slow = metric("requests_per_s", -39.0, 6, 22, "worse")
        res = results({"c1": QUIET, "c64": with_metric("requests_per_s", slow)})
        rc, md, _, data = self.run_gate(res, "--confirm", self.write("again.json", res))
        self.assertEqual(rc, 1, md)
        self.assertIn("head moves -39.0 % req/s", md)
        self.assertIn("at ping/c64/pinned", md)

    def test_open_loop_latency_is_judged_against_its_mde(self):
        """F7: a head 25x slower at p50 on the open-loop cell passed: latency was never judged."""
        def open_cell(ms):
            res = results({"r5000": ms})
            for c in res["cells"]:
                c.update(scenario="ping-open", offered_rate_per_s=5000.0)
            for v in res["verdicts"]:
                v["scenario"] = "ping-open"
            res["calibration"]["cells"][0]["scenario"] = "ping-open"
            return res
        quiet = [metric("cpu_us_per_request", 1.0, 4, 12), metric("latency_p50_us", 3.0, 8, 15),
                 metric("latency_p99_us", 20.0, 60, 90), metric("syscalls_per_request", 0.0, 0.01, 0.01)]
        gate = dict(metrics="syscalls_per_request,time")
        rc, md, _, data = self.run_gate(open_cell(quiet), **gate)
        self.assertEqual(rc, 0, md)
        self.assertEqual({r["metric"] for r in data["rows"] if r["arm"] == "time"},
                         {"cpu_us_per_request", "latency_p50_us", "latency_p99_us"})
        slow = [m if m["metric"] != "latency_p50_us" else metric("latency_p50_us", 2478.0, 900, 15, "worse")
                for m in quiet]
        res = open_cell(slow)
        rc, md, _, _ = self.run_gate(res, "--confirm", self.write("again.json", res), **gate)
        self.assertEqual(rc, 1, md)
        self.assertIn("head moves +2478.0 % p50 latency", md)
        # p99 past its threshold but not past its own (wide) MDE: not failed.
        wide = [m if m["metric"] != "latency_p99_us" else metric("latency_p99_us", 60.0, 40, 90, "worse")
                for m in quiet]
        self.assertEqual(self.run_gate(open_cell(wide), **gate)[0], 0)

    def test_a_run_without_metric_definitions_cannot_be_judged(self):
        """The verdict judges by the table the run recorded; a results.json without one (a
        runner older than this verdict) is not judged by a guess."""
        res = results({"c1": QUIET})
        del res["metrics"]
        rc, md, err, _ = self.run_gate(res)
        self.assertEqual(rc, 1, md)
        self.assertIn("no metric definitions", md)
        self.assertEqual(err, "")

    def test_a_count_that_follows_time_is_judged_as_a_time(self):
        """An A/A gate failed on open-loop syscalls/request, +2.85 % [+0.66, +5.09] past a 2.33 %
        MDE, then -2.19 % in the confirming run: 'unstable'. At a fixed offered rate syscalls batch
        with timing (CV over 1 % between repetitions of one binary), so such a count is judged as
        a time: past THRESHOLD_PCT and its MDE, and a change that does not repeat is noise."""
        def run(change, cv, verdict="worse"):
            res = results({"c1": with_metric("syscalls_per_request",
                                             metric("syscalls_per_request", change, 2.2, 2.33, verdict))})
            for c in res["cells"]:
                c.setdefault("counted", {})["server"] = {"syscalls": {"n": 5, "median": 2.9, "mean": 2.9,
                                                                       "min": 2.8, "max": 3.0, "cv": cv}}
            base = dict(res["cells"][0], key=f"{BASE}__ping__c1__pinned", service=BASE)
            res["cells"].append(base)
            return res
        metrics = dict(metrics="syscalls_per_request,time")
        # Exact (CV 0.1 %): the count arm, and a change that does not repeat is a finding.
        rc, md, _, _ = self.run_gate(run(2.85, 0.001), "--confirm", self.write("again.json", run(-2.19, 0.001)), **metrics)
        self.assertEqual(rc, 1, md)
        self.assertIn("unstable", md)
        # Not exact (CV 3 %): under THRESHOLD_PCT (5 %), unchanged.
        rc, md, _, data = self.run_gate(run(2.85, 0.03), **metrics)
        self.assertEqual(rc, 0, md)
        row = next(r for r in data["rows"] if r["metric"] == "syscalls_per_request")
        self.assertEqual((row["arm"], row["exact"], row["threshold_pct"]), ("counted", False, 5.0))
        self.assertIn("not exact here", row["why"])
        # Past it once and not again: noise, shown, not failed.
        rc, md, _, data = self.run_gate(run(8.0, 0.03), "--confirm", self.write("again.json", run(-2.19, 0.03)), **metrics)
        self.assertEqual(rc, 0, md)
        self.assertIn("moved +8.0 % once, not again (noise)", md)
        # Past it twice: confirmed, a failure as any.
        rc, md, _, _ = self.run_gate(run(8.0, 0.03), "--confirm", self.write("again.json", run(8.0, 0.03)), **metrics)
        self.assertEqual(rc, 1, md)
        self.assertIn("regressed (confirmed)", md)

    def test_what_cannot_be_judged_fails_with_its_reason_and_no_traceback(self):
        one_rep = [metric(m["metric"], None) for m in QUIET]
        rc, md, err, _ = self.run_gate(results({"c1": one_rep}))
        self.assertEqual(rc, 1, md)
        self.assertIn("fewer than two repetitions", md)
        self.assertEqual(err, "")
        rc, md, _, _ = self.run_gate(results({"c1": None}, cells_status="failed"))
        self.assertEqual(rc, 1, md)
        self.assertIn("**Cannot be judged**: svc@head: failed: startup: no 200", md)
        rc, md, _, _ = self.run_gate({"status": "completed", "cells": [], "verdicts": [], "metrics": DEFINITIONS})
        self.assertEqual(rc, 1)
        self.assertIn("svc@head has no cells in this run", md)
        no_instr = [m for m in QUIET if m["metric"] != "instructions_per_request"]
        rc, md, _, _ = self.run_gate(results({"c1": no_instr}))
        self.assertEqual(rc, 1, md)
        self.assertIn("not measured in this cell", md)
        # Instructions are counted at c1 only: their absence at c64 is no failure.
        self.assertEqual(self.run_gate(results({"c1": QUIET, "c64": no_instr}))[0], 0)

    def test_only_a_complete_run_is_judged(self):
        """A quiet head passes only when every planned cell of both sides ended measured, each
        planned A/A arm has its calibration, and the run (and a confirming run) finished."""
        res = results({"c1": QUIET})
        planned = plan_of(res)
        base_cell = {"key": f"{BASE}__ping__c1__pinned", "service": BASE, "scenario": "ping", "level": "c1",
                     "profile": "pinned"}
        arm = {**base_cell, "key": f"{BASE}__ping__c1__pinned__aa", "arm": "b"}
        whole = {**res, "cells": res["cells"] + [{**base_cell, "status": "ok", "n": 5}]}
        self.assertEqual(self.run_gate_planned(whole, planned + [base_cell, arm])[0], 0)
        # A head cell that failed beside one that was judged (its verdict is missing, not bad).
        c64 = {"key": f"{HEAD}__ping__c64__pinned", "service": HEAD, "scenario": "ping", "level": "c64",
               "profile": "pinned"}
        failed = {**whole, "cells": whole["cells"] + [{**c64, "status": "failed", "n": 0, "failure": "crashed"}]}
        rc, md, _, data = self.run_gate_planned(failed, planned + [base_cell, c64])
        self.assertEqual(rc, 1, md)
        self.assertIn("FAIL", md)
        self.assertIn("svc@head at ping/c64/pinned did not end measured: failed: crashed", md)
        self.assertFalse(data["pass"])
        # A failed base cell, and a planned cell with no result at all.
        broke = {**res, "cells": res["cells"] + [{**base_cell, "status": "failed", "n": 0, "failure": "no 200"}]}
        rc, md, _, _ = self.run_gate_planned(broke, planned + [base_cell])
        self.assertEqual(rc, 1, md)
        self.assertIn("svc@base at ping/c1/pinned did not end measured: failed: no 200", md)
        rc, md, _, _ = self.run_gate_planned(res, planned + [c64])
        self.assertEqual(rc, 1, md)
        self.assertIn("has no result for svc@head at ping/c64/pinned", md)
        # An A/A arm without its calibration: the counted thresholds would be missing.
        uncal = {**res, "calibration": {"service": BASE, "cells": []}}
        rc, md, _, _ = self.run_gate_planned(uncal, planned + [arm])
        self.assertEqual(rc, 1, md)
        self.assertIn("A/A calibration of svc@base at ping/c1/pinned (arm b) has no result", md)
        # An interrupted run (matrix exits 130, results.json `interrupted`), every cell present.
        rc, md, _, _ = self.run_gate({**res, "status": "interrupted"})
        self.assertEqual(rc, 1, md)
        self.assertIn("the first run did not finish (status 'interrupted')", md)
        # A confirming run whose head cell failed cannot confirm nor clear the regression.
        reg = results({"c1": with_metric("syscalls_per_request", metric("syscalls_per_request", 3.0, 0.1, 0.01))})
        self.assertEqual(self.run_gate(reg)[0], g.EXIT_CONFIRM)
        again = results({"c1": None}, cells_status="failed")
        rc, md, _, _ = self.run_gate(reg, "--confirm", self.write("again.json", again))
        self.assertEqual(rc, 1, md)
        self.assertIn("the confirming run's cell svc@head at ping/c1/pinned did not end measured", md)
        # An incomplete first run with a regression fails at once: nothing to confirm.
        rc, md, _, _ = self.run_gate({**reg, "status": "interrupted"})
        self.assertEqual(rc, 1, md)
        # No run.json beside results.json: bad input, not a pass.
        p = os.path.join(self.dir.name, "lone.json")
        with open(p, "w") as f:
            json.dump(res, f)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(g.main([p, BASE, HEAD, "5", "time"]), 2)

    def run_gate_planned(self, res, plan):
        """run_gate with run.json's plan given."""
        out = io.StringIO()
        j = os.path.join(self.dir.name, "gate-planned.json")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = g.main(["--json", j, self.write("planned", res, plan), BASE, HEAD, "5",
                         "syscalls_per_request,ctx_switches_per_request,instructions_per_request,time"])
        with open(j) as f:
            return rc, out.getvalue(), None, json.load(f)

    def test_counted_metrics_without_an_aa_of_their_cell_are_shown_not_gated(self):
        res = results({"c1": with_metric("syscalls_per_request", metric("syscalls_per_request", 8.0, 1.0, None))})
        res["calibration"]["cells"] = []
        rc, md, _, data = self.run_gate(res)
        self.assertEqual(rc, 0, md)
        row = next(r for r in data["rows"] if r["metric"] == "syscalls_per_request")
        self.assertEqual((row["verdict"], row["why"]), ("not gated", "no A/A of this cell in this run"))
        self.assertIn("shown but not gated", md)

    def test_a_real_change_under_the_floor_is_called_real_with_its_counts_never_unchanged(self):
        res = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 0.32, 0.015, 0.025))})
        counted(res, "c1", "base", 2181)
        counted(res, "c1", "head", 2188)
        rc, md, _, data = self.run_gate(res)
        self.assertEqual(rc, 0, md)
        self.assertIn("instructions/request +0.32 % [+0.30, +0.34] (2,181 → 2,188, +7) at ping/c1/pinned: real, "
                      "under the 0.5 % gate floor: not failed", md)
        self.assertNotIn("instructions unchanged", md)
        self.assertIn("1 real but under the floor", md)
        row = next(r for r in data["rows"] if r["metric"] == "instructions_per_request")
        self.assertEqual((row["verdict"], row["base_value"], row["head_value"]), (g.REAL, 2181, 2188))
        # Inside its A/A MDE, or an interval reaching 0: unchanged, as before.
        for change, half in [(0.02, 0.01), (0.3, 0.4)]:
            res = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", change, half, 0.025))})
            rc, md, _, _ = self.run_gate(res)
            self.assertIn("instructions unchanged", md)

    def test_a_counted_regression_says_where_it_went_function_by_function(self):
        res = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 7.6, 0.01, 0.03))})
        base_fns = [("httparse::Request::parse", "httparse", 300.0), ("ping_epoll::serve", "ping_epoll", 900.0),
                    ("memcpy", "libc", 20.0)]
        head_fns = [("httparse::Request::parse", "httparse", 310.0), ("ping_epoll::serve", "ping_epoll", 900.2),
                    ("memcpy", "libc", 31.0), ("malloc", "libc", 41.0), ("_int_free", "libc", 64.0),
                    ("free", "libc", 21.0), ("ping_epoll::tiny", "ping_epoll", 0.3)]
        counted(res, "c1", "base", 2188, base_fns)
        counted(res, "c1", "head", 2354, head_fns)
        rc, md, _, data = self.run_gate(res, "--confirm", self.write("again.json", res))
        self.assertEqual(rc, 1, md)
        self.assertIn("head costs +7.60 % instructions/request (2,188 → 2,354, +166) on svc at ping/c1/pinned", md)
        self.assertIn("### Where instructions/request moved at ping/c1/pinned (2,188 → 2,354, +166)", md)
        table = md.split("### Where")[1]
        order = [table.index(f"`{f}`") for f in ["_int_free", "malloc", "free", "memcpy", "httparse::Request::parse"]]
        self.assertEqual(order, sorted(order), table)
        self.assertNotIn("ping_epoll::serve", table, "moved under 0.5 a request")
        self.assertIn("| `malloc` | `libc` | – | 41.0 | +41.0 | 25 % |", table)
        self.assertIn("add up to +147.0 instructions per request (89 % of +166.0)", table)
        fns = next(r for r in data["rows"] if r["metric"] == "instructions_per_request")["functions"]
        self.assertEqual(fns[0]["function"], "_int_free")

    def test_a_patched_crate_is_judged_on_its_own_instructions(self):
        res = results({"c1": with_metric("instructions_per_request", metric("instructions_per_request", 0.32, 0.015, 0.025))})
        counted(res, "c1", "base", 2181, crates=[("httparse", 510.0, 0.1), ("libc", 400.0, 0.1)])
        counted(res, "c1", "head", 2188, crates=[("httparse", 517.0, 0.1), ("libc", 400.0, 0.1)])
        rc, md, _, data = self.run_gate(res, "--crate", "httparse")
        self.assertEqual(rc, g.EXIT_CONFIRM, md)
        row = next(r for r in data["rows"] if r["metric"] == g.CRATE_METRIC)
        self.assertEqual(row["verdict"], "regressed")
        self.assertAlmostEqual(row["change_pct"], 700 / 510, places=6)
        self.assertIn("head costs +1.37 % instructions/request inside httparse (510 → 517, +7)", md)
        # Ranges that overlap: not a finding; a crate the cells did not count: cannot be judged.
        counted(res, "c1", "head", 2181, crates=[("httparse", 510.2, 0.5)])
        rc, md, _, _ = self.run_gate(res, "--crate", "httparse")
        self.assertEqual(rc, 0, md)
        rc, md, _, _ = self.run_gate(res, "--crate", "bytes")
        self.assertEqual(rc, 1, md)
        self.assertIn("no instructions of crate bytes counted on either side", md)

    def test_what_was_compared_opens_the_report_from_run_json(self):
        res = results({"c1": QUIET})
        run = {"environment": {"variants": [
            {"service": BASE, "commit": "a" * 40, "rev": "HEAD",
             "patches": {"httparse": {"source": "git", "rev": "v1.10.1", "commit": "19b5fc7" + "0" * 33}}},
            {"service": HEAD, "commit": "a" * 40, "rev": "HEAD",
             "patches": {"httparse": {"source": "git", "rev": "pr-`alloc`|x", "commit": "1a4f94e" + "0" * 33}}}]}}
        counted(res, "c1", "base", 2181, crates=[("httparse", 510.0, 0.1)])
        counted(res, "c1", "head", 2181, crates=[("httparse", 510.0, 0.1)])
        rc, md, _, data = self.run_gate(res, "--crate", "httparse", run=run)
        lines = md.splitlines()
        self.assertEqual(lines[0], "## Regression gate: PASS")
        self.assertEqual(lines[2], "crate `httparse`: `19b5fc7` (v1.10.1) → `1a4f94e` (pr-'alloc'¦x), in `svc`.")
        self.assertEqual(data["crate"], "httparse")

    def test_bad_input_exits_2_before_judging(self):
        rc, _, err, _ = self.run_gate(results({"c1": QUIET}), "--crate", "--x y")
        self.assertEqual(rc, 2)
        self.assertIn("--crate must be a crate name", err)
        res = results({"c1": QUIET})
        for extra in [dict(metrics="instructions"), dict(metrics="time,bogus"), dict(metrics=""),
                      dict(metrics="packets"), dict(metrics="wakeups_per_request"),
                      dict(threshold="five"), dict(threshold="-1"), dict(threshold="nan")]:
            rc, md, err, _ = self.run_gate(res, **extra)
            self.assertEqual(rc, 2, extra)
            self.assertEqual(md, "")
            self.assertIn("gate:", err)
        rc, _, err, _ = self.run_gate(res, "--confirm", os.path.join(self.dir.name, "missing.json"))
        self.assertEqual(rc, 2)
        self.assertIn("cannot read", err)


if __name__ == "__main__":
    unittest.main()
