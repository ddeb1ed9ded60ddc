#!/usr/bin/env python3
"""Tests of scripts/gate.sh itself, end to end with a stand-in `matrix`: the gate runs in a
scratch git repository holding a copy of scripts/ and services/services.toml, whose
target/release/matrix is the Python script below. It writes a made-up run (run.json and
results.json) as the mode in FAKE_MATRIX_MODE says and exits as the real one would. Run:
python3 -m unittest discover -s scripts/lib -p 'test_*.py' (scripts/test.sh does)."""

import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = "ping-tokio-hyper"

FAKE_MATRIX = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
mode = os.environ["FAKE_MATRIX_MODE"]
if mode == "bad-source":
    # What the real matrix says of a revision of BASE_SOURCE that does not exist.
    config = args[args.index("--config") + 1]
    print(f'matrix: {config}:22:68: services[0].variants[0].patch.httparse.rev: revision '
          '"no-such-rev" does not exist in file:///src/httparse', file=sys.stderr)
    print(f'{config}:26:8: services[0].variants[1].patch.httparse: {os.environ["FAKE_SERVICE"]} does not depend on '
          'httparse at 0637fa0dbecb, so there is nothing to patch', file=sys.stderr)
    sys.exit(2)
if mode in ("building", "stubborn"):
    # A variant build in progress: a child in a process group of its own (as matrix starts
    # cargo), its pid and ours written where the test looks. "building" stops as the real
    # matrix does on SIGTERM (kills the build's group, exits 130); "stubborn" ignores it.
    import signal, subprocess, time
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    def stop(*_):
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        sys.exit(130)
    if mode == "building":
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    else:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    with open(os.environ["FAKE_PIDS"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(300)
    sys.exit(0)
svc = os.environ["FAKE_SERVICE"]
base, head = svc + "@base", svc + "@head"
cells, plan, verdicts = [], [], []
for scenario, level, rate in [("ping", "c1", None), ("ping-open", "r5000", 5000.0)]:
    for s in (base, head):
        key = f"{s}__{scenario}__{level}__pinned"
        plan.append({"key": key, "service": s, "scenario": scenario, "level": level, "profile": "pinned"})
        failed = s == head and scenario == "ping-open" and mode in ("head-failed", "tamper")
        if mode == "interrupted" and scenario == "ping-open":
            continue  # never measured
        cells.append({"key": key, "service": s, "scenario": scenario, "level": level, "profile": "pinned",
                      "status": "failed" if failed else "ok", "n": 0 if failed else 3,
                      "offered_rate_per_s": rate, "failure": "crashed" if failed else None})
        if mode == "faults":
            # Two page faults per request on head, about none on base: the absolute arm.
            f = 2.0 if s == head else 0.0001
            cells[-1]["counted"] = {"server": {"faults": {"n": 3, "median": f, "mean": f, "min": f, "max": f}}}
        if s == head and not failed:
            d = {"ratio": 1.0, "change_pct": 0.0, "ci95_low_pct": -0.01, "ci95_high_pct": 0.01, "df": 2.0,
                 "paired": True}
            if mode == "regressed":
                d = {"ratio": 1.05, "change_pct": 5.0, "ci95_low_pct": 4.9, "ci95_high_pct": 5.1, "df": 2.0,
                     "paired": True}
            verdicts.append({"key": key, "service": head, "baseline": base, "scenario": scenario,
                             "level": level, "profile": "pinned",
                             "metrics": [{"metric": "syscalls_per_request", "difference": d,
                                          "verdict": "no_change", "mde_pct": 0.1}]})
run = os.path.join(out, "2026-01-01T00-00-00Z-fake")
os.makedirs(run)
status = "interrupted" if mode == "interrupted" else "completed"
cal = {"service": base, "cells": [{"scenario": sc, "level": lv, "profile": "pinned"}
                                  for sc, lv in [("ping", "c1"), ("ping-open", "r5000")]]}
with open(os.path.join(run, "run.json"), "w") as f:
    json.dump({"status": status, "plan": plan}, f)
with open(os.path.join(run, "results.json"), "w") as f:
    json.dump({"status": status, "cells": cells, "verdicts": verdicts, "calibration": cal,
               "metrics": json.load(open("scripts/lib/metrics.json"))}, f)
if mode == "tamper":
    # What a head's build script or service could do: it runs as the same user, in the checkout.
    with open("scripts/lib/gate_verdict.py", "w") as f:
        f.write("import sys\nprint('## Regression gate: PASS (forged)')\nsys.exit(0)\n")
    with open("scripts/lib/metrics.json", "w") as f:
        f.write("[]\n")
    with open("scripts/gate.sh", "w") as f:
        f.write("echo '## Regression gate: PASS (forged)'\nexit 0\n" * 200)
if mode == "swap-loadgen":
    with open("target/release/loadgen", "a") as f:
        f.write("# another loadgen\n")
sys.exit({"interrupted": 130, "head-failed": 1, "tamper": 1}.get(mode, 0))
'''


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


class GateScript(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.repo = os.path.join(self.dir.name, "repo")
        os.makedirs(os.path.join(self.repo, "services"))
        shutil.copytree(os.path.join(ROOT, "scripts"), os.path.join(self.repo, "scripts"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(ROOT, "services", "services.toml"), os.path.join(self.repo, "services"))
        with open(os.path.join(self.repo, ".gitignore"), "w") as f:
            f.write("target/\n")
        git(self.repo, "init", "-q")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "base")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "head")
        rel = os.path.join(self.repo, "target", "release")
        os.makedirs(rel)
        for name, text in [("matrix", FAKE_MATRIX), ("loadgen", "#!/bin/sh\nexit 0\n")]:
            p = os.path.join(rel, name)
            with open(p, "w") as f:
                f.write(text)
            os.chmod(p, 0o755)

    def gate(self, mode, metrics="syscalls_per_request"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        # BUILD=0: the stand-in binaries are the gate's tools, nothing to build.
        env.update(FAKE_MATRIX_MODE=mode, FAKE_SERVICE=SERVICE, SERVICE=SERVICE,
                   GATE_METRICS=metrics, REPS="3", BUILD="0")
        p = subprocess.run(["bash", "scripts/gate.sh", "HEAD~1", "HEAD"], cwd=self.repo, env=env,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def test_a_complete_quiet_run_passes(self):
        rc, out, err = self.gate("quiet")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("Regression gate: PASS", out)

    def test_the_gate_measures_concurrency_and_open_loop_latency_and_counts_faults(self):
        """F6/F7/F5: the gate's matrix has a c64 cell beside c1 (both calibrated A/A) and the
        open-loop cell, and faults and time are gated by default."""
        import tomllib
        rc, out, err = self.gate("quiet")
        self.assertEqual(rc, 0, out + err)
        with open(os.path.join(self.repo, "target", "gate", "first.toml"), "rb") as f:
            config = tomllib.load(f)
        ping = next(s for s in config["scenarios"] if s["name"] == "ping")
        self.assertEqual(ping["load"]["connections"], [1, 64])
        self.assertEqual(set(config["calibration"]["cells"]),
                         {"ping/c1/pinned", "ping/c64/pinned", "ping-open/r5000/pinned"})
        with open(os.path.join(ROOT, "scripts", "gate.sh")) as f:
            default = next(line for line in f if line.startswith("metrics=${GATE_METRICS:-"))
        for m in ("faults_per_request", "time"):
            self.assertIn(m, default)

    def test_a_regression_is_measured_again_without_an_aa_of_its_own(self):
        """The confirming run is judged against the first run's thresholds: it runs no A/A
        calibration (a third of its time), the first run does."""
        import tomllib
        rc, out, err = self.gate("regressed")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("regressed (confirmed)", out)
        configs = {}
        for name in ("first", "confirm"):
            with open(os.path.join(self.repo, "target", "gate", name + ".toml"), "rb") as f:
                configs[name] = tomllib.load(f)
        self.assertIn("calibration", configs["first"])
        self.assertNotIn("calibration", configs["confirm"])
        self.assertEqual([v["name"] for v in configs["confirm"]["services"][0]["variants"]], ["head", "base"])

    def test_a_page_fault_regression_from_a_base_of_zero_is_confirmed_and_fails(self):
        """A real --burn-faults 2 gate crashed here: the confirming run's announcement formatted
        a percent change the absolute arm does not have (its base is 0)."""
        rc, out, err = self.gate("faults", metrics="syscalls_per_request,faults_per_request")
        self.assertEqual(rc, 1, out + err)
        self.assertNotIn("Traceback", err)
        self.assertIn("faults_per_request +2.000/request at ping/c1/pinned", err)
        self.assertIn("regressed (confirmed)", out)
        self.assertIn("head costs +2.000 page faults/request", out)

    def test_an_interrupted_run_cannot_be_judged(self):
        rc, out, err = self.gate("interrupted")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("Cannot be judged", out + err)
        self.assertIn("matrix exited 130: interrupted", out + err)
        self.assertNotIn("PASS", out + err)

    def test_heads_code_rewriting_the_gates_tools_does_not_change_the_verdict(self):
        """Issue 47 item 2: a head that rewrites gate_verdict.py (and gate.sh) while it runs got
        its own PASS. The verdict comes from the copy taken before the run: head's cell failed."""
        rc, out, err = self.gate("tamper")
        self.assertEqual(rc, 1, out + err)
        self.assertNotIn("forged", out + err)
        self.assertIn(f"{SERVICE}@head at ping-open/r5000/pinned did not end measured", out)

    def test_a_binary_the_gate_uses_changed_during_the_run_cannot_be_judged(self):
        rc, out, err = self.gate("swap-loadgen")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("changed while head's code ran", out + err)
        self.assertNotIn("PASS", out + err)

    def test_a_failed_head_cell_fails_the_gate(self):
        rc, out, err = self.gate("head-failed")
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"{SERVICE}@head at ping-open/r5000/pinned did not end measured", out)
        self.assertNotIn("PASS", out)

    def test_the_gate_builds_the_workspace_itself_and_says_whether_it_had_to(self):
        """F1: one build command, the variants' own; run by the gate, which says what it did."""
        fake = os.path.join(self.dir.name, "bin")
        os.makedirs(fake)
        calls = os.path.join(self.dir.name, "cargo-calls")
        for stale in (True, False):
            with open(os.path.join(fake, "cargo"), "w") as f:
                f.write(f"#!/bin/sh\necho \"$*\" >>{calls}\n" +
                        ("echo '# rebuilt' >>target/release/matrix\n" if stale else ""))
            os.chmod(os.path.join(fake, "cargo"), 0o755)
            env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
            env.update(FAKE_MATRIX_MODE="quiet", FAKE_SERVICE=SERVICE, SERVICE=SERVICE,
                       GATE_METRICS="syscalls_per_request", REPS="3",
                       PATH=fake + os.pathsep + env["PATH"])
            p = subprocess.run(["bash", "scripts/gate.sh", "HEAD~1", "HEAD"], cwd=self.repo,
                               env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            said = "were missing or older" if stale else "were up to date"
            self.assertIn(said, p.stderr)
        with open(calls) as f:
            self.assertEqual(f.read().splitlines(), ["build --release --workspace --locked"] * 2)

    def test_errors_name_the_settings_given_not_the_generated_file(self):
        """F11: `target/gate/first.toml:22:68: services[0].variants[0].patch.httparse.rev` named
        a file the user never wrote; it names BASE_SOURCE (or PATCH_CRATE) now."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        env.update(FAKE_MATRIX_MODE="bad-source", FAKE_SERVICE=SERVICE, SERVICE=SERVICE,
                   GATE_METRICS="syscalls_per_request", REPS="3", PATCH_CRATE="httparse",
                   BASE_SOURCE=self.repo + "#no-such-rev", HEAD_SOURCE=self.repo + "#HEAD", BUILD="0")
        p = subprocess.run(["bash", "scripts/gate.sh"], cwd=self.repo, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"matrix: BASE_SOURCE={self.repo}#no-such-rev: revision \"no-such-rev\"",
                      p.stderr)
        self.assertIn(f"PATCH_CRATE=httparse: {SERVICE} does not depend on httparse", p.stderr)
        self.assertNotIn(".toml:", p.stderr)

    def cancelled(self, mode, sig, watch=2):
        """F12: the gate signalled while matrix builds; (seconds until the gate exited and
        the first `watch` of matrix and its build child were gone, the gate's exit status,
        those still alive after 10 s)."""
        import signal
        import time
        pids = os.path.join(self.dir.name, "pids")
        if os.path.exists(pids):
            os.remove(pids)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        env.update(FAKE_MATRIX_MODE=mode, FAKE_SERVICE=SERVICE, SERVICE=SERVICE,
                   GATE_METRICS="syscalls_per_request", REPS="3", FAKE_PIDS=pids, BUILD="0")
        gate = subprocess.Popen(["bash", "scripts/gate.sh", "HEAD~1", "HEAD"], cwd=self.repo,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: gate.poll() is None and gate.kill())
        deadline = time.monotonic() + 60
        while not os.path.exists(pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(pids) as f:
            started = [int(p) for p in f.read().split()][:watch]
        sent = time.monotonic()
        # To the gate alone, not its process group: what a CI runner's cancel may do.
        gate.send_signal(sig)

        def alive(pid):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().split(") ")[-1][0] != "Z"
            except FileNotFoundError:
                return False
        while time.monotonic() - sent < 10 and (gate.poll() is None or any(map(alive, started))):
            time.sleep(0.05)
        took = time.monotonic() - sent
        self.took = took
        left = [p for p in started if alive(p)]
        # The stubborn stand-in's build child, whoever is left: not the test's to leave.
        with open(pids) as f:
            for p in [int(p) for p in f.read().split()]:
                if alive(p):
                    os.kill(p, signal.SIGKILL)
        _, err = gate.communicate(timeout=10)
        self.gate_stderr = err.decode()
        return took, gate.returncode, left

    def test_a_cancelled_gate_stops_matrix_and_its_builds_within_5_s(self):
        import signal
        for sig, status in [(signal.SIGTERM, 143), (signal.SIGINT, 130)]:
            took, rc, left = self.cancelled("building", sig)
            self.assertEqual(left, [], f"{sig!r}: still running after {took:.1f} s")
            self.assertLess(took, 5.0)
            # bash re-raises SIGINT on exit from its INT trap: the parent sees the signal.
            self.assertIn(rc, (status, -sig), self.gate_stderr)
            self.assertIn("stopping matrix", self.gate_stderr)

    def test_a_matrix_that_ignores_the_signal_is_killed_within_5_s(self):
        import signal
        # Only matrix is watched: its build child is in a group of its own, which only a
        # matrix that stops can stop (the real one does, as the "building" stand-in).
        took, rc, left = self.cancelled("stubborn", signal.SIGTERM, watch=1)
        self.assertEqual(left, [], f"matrix still running after {took:.1f} s")
        self.assertLess(took, 5.0)
        self.assertEqual(rc, 143)


if __name__ == "__main__":
    unittest.main()
