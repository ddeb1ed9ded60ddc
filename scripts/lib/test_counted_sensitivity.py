#!/usr/bin/env python3
"""Tests of counted_sensitivity.py's report on made-up trials: fewer trials than its targets
are stated over are not judged (issue 36, item 18: TRIALS=3 printed "3 / 3 trials -> FAIL
(target >= 3 of 3)"). Run: python3 -m unittest discover -s scripts/lib -p 'test_*.py'."""

import contextlib
import io
import unittest

import counted_sensitivity as cs


def trial(aa, burn):
    verdicts = {m: "no_change" for m, _ in cs.METRICS}
    return {"aa": {**verdicts, cs.INS: aa}, "burn": {**verdicts, cs.INS: burn},
            "burn_d": {"ratio": 1.01}, "failed": False}


def report(results):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cs.report(results, 19, 1.0, 60.0)
    return out.getvalue()


class Report(unittest.TestCase):
    def test_three_trials_are_a_quick_look_not_a_verdict(self):
        text = report([trial("no_change", "worse")] * 3)
        self.assertIn("'costlier' in 3 / 3 trials  -> NOT JUDGED (3 < 10 trials)", text)
        self.assertIn("0 / 3 = 0.0 %  -> NOT JUDGED (3 < 10 trials)", text)
        self.assertNotIn("-> FAIL", text.replace("Wall time", ""))

    def test_ten_trials_are_judged_against_the_targets(self):
        text = report([trial("no_change", "worse")] * 9 + [trial("worse", "no_change")])
        self.assertIn("1 / 10 = 10.0 %  -> FAIL", text)
        self.assertIn("'costlier' in 9 / 10 trials  -> PASS", text)


if __name__ == "__main__":
    unittest.main()
