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


def metric(name, change, half=0.05, mde=0.1, verdict="no_change"):
    d = None if change is None else {
        "ratio": 1 + change / 100, "change_pct": change, "ci95_low_pct": change - half,
        "ci95_high_pct": change + half, "df": 5.0, "paired": True}
    return {"metric": name, "difference": d, "verdict": verdict, "mde_pct": mde}


def results(level_metrics, cells_status="ok"):
    cells, verdicts = [], []
    for level, ms in level_metrics.items():
        key = f"{HEAD}__ping__{level}__pinned"
        cells.append({"key": key, "service": HEAD, "status": cells_status, "offered_rate_per_s": None,
                      "failure": None if cells_status == "ok" else "startup: no 200"})
        if ms is not None:
            verdicts.append({"key": key, "service": HEAD, "baseline": BASE, "scenario": "ping",
                             "level": level, "profile": "pinned", "metrics": ms})
    cal = {"service": BASE, "cells": [{"scenario": "ping", "level": lv, "profile": "pinned"} for lv in level_metrics]}
    return {"cells": cells, "verdicts": verdicts, "calibration": cal}


QUIET = [metric("requests_per_s", 2.0, 10, 19), metric("syscalls_per_request", 0.01, 0.01, 0.01),
         metric("ctx_switches_per_request", -0.1, 0.3, 0.6), metric("instructions_per_request", 0.02, 0.01, 0.1)]


def with_metric(name, m):
    return [m if x["metric"] == name else x for x in QUIET]


class Gate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, res):
        p = os.path.join(self.dir.name, name)
        with open(p, "w") as f:
            json.dump(res, f)
        return p

    def run_gate(self, res, *extra, metrics="syscalls_per_request,ctx_switches_per_request,instructions_per_request,time",
                 threshold="5"):
        out, err = io.StringIO(), io.StringIO()
        j = os.path.join(self.dir.name, "gate.json")
        if os.path.exists(j):
            os.remove(j)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = g.main(["--json", j, *extra, self.write("r.json", res), BASE, HEAD, threshold, metrics])
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
        self.assertIn("head costs +1.2 % instructions/request on svc at ping/c1/pinned", md)
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
        self.assertIn("head costs +5.0 % packets/request on svc at ping/c64/pinned", md)
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

    def test_what_cannot_be_judged_fails_with_its_reason_and_no_traceback(self):
        one_rep = [metric(m["metric"], None) for m in QUIET]
        rc, md, err, _ = self.run_gate(results({"c1": one_rep}))
        self.assertEqual(rc, 1, md)
        self.assertIn("fewer than two repetitions", md)
        self.assertEqual(err, "")
        rc, md, _, _ = self.run_gate(results({"c1": None}, cells_status="failed"))
        self.assertEqual(rc, 1, md)
        self.assertIn("**Cannot be judged**: svc@head: failed: startup: no 200", md)
        rc, md, _, _ = self.run_gate({"cells": [], "verdicts": []})
        self.assertEqual(rc, 1)
        self.assertIn("svc@head has no cells in this run", md)
        no_instr = [m for m in QUIET if m["metric"] != "instructions_per_request"]
        rc, md, _, _ = self.run_gate(results({"c1": no_instr}))
        self.assertEqual(rc, 1, md)
        self.assertIn("not measured in this cell", md)
        # Instructions are counted at c1 only: their absence at c64 is no failure.
        self.assertEqual(self.run_gate(results({"c1": QUIET, "c64": no_instr}))[0], 0)

    def test_counted_metrics_without_an_aa_of_their_cell_are_shown_not_gated(self):
        res = results({"c1": with_metric("syscalls_per_request", metric("syscalls_per_request", 8.0, 1.0, None))})
        res["calibration"]["cells"] = []
        rc, md, _, data = self.run_gate(res)
        self.assertEqual(rc, 0, md)
        row = next(r for r in data["rows"] if r["metric"] == "syscalls_per_request")
        self.assertEqual((row["verdict"], row["why"]), ("not gated", "no A/A of this cell in this run"))
        self.assertIn("shown but not gated", md)

    def test_bad_input_exits_2_before_judging(self):
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
