#!/usr/bin/env python3
"""The gate step of each workflow (.github/workflows/{bench,runtime}-gate.yml), run as GitHub
runs it (bash -eo pipefail) in a scratch repository whose base branch moved on after the pull
request forked: scripts/gate.sh (a stand-in that records what it is given) must be handed the
merge base and the head, never the base branch's tip. Run: python3 -m unittest discover -s
scripts/lib -p 'test_*.py' (scripts/test.sh does)."""

import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORD = '#!/bin/sh\nprintf "%s\\n" "$@" "BASE_SOURCE=${BASE_SOURCE:-}" "HEAD_SOURCE=${HEAD_SOURCE:-}" >"$GATE_ARGS"\n'


def gate_step(workflow):
    """The `run:` script of the step named `Gate (…)`."""
    return step(workflow, "Gate (")


def step(workflow, name):
    """The `run:` script of the step whose name starts `name` (no YAML parser: CI's Python may
    lack one)."""
    with open(os.path.join(ROOT, ".github", "workflows", workflow), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("- name: " + name))
    step_indent = len(lines[start]) - len(lines[start].lstrip())
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= step_indent:
            break
        if line.strip().startswith("run: ") and line.strip() != "run: |":
            return line.strip()[len("run: "):] + "\n"
        if line.strip() == "run: |":
            body_indent = None
            body = []
            for b in lines[i + 1:]:
                if b.strip():
                    ind = len(b) - len(b.lstrip())
                    if body_indent is None:
                        body_indent = ind
                    if ind < body_indent:
                        break
                body.append(b[body_indent or 0:])
            return "\n".join(body) + "\n"
    raise AssertionError(f"{workflow}: the {name}… step has no `run:` script")


def git(repo, *args):
    out = subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid",
                          "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


class GateSteps(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        # fork ← head (the PR), fork ← moved (merged into the base branch after the PR forked).
        self.repo = os.path.join(self.dir.name, "runtime")
        os.makedirs(self.repo)
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "fork point")
        self.fork = git(self.repo, "rev-parse", "HEAD")
        git(self.repo, "checkout", "-q", "-b", "pr")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "the PR")
        self.head = git(self.repo, "rev-parse", "HEAD")
        git(self.repo, "checkout", "-q", "main")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "merged since")
        self.tip = git(self.repo, "rev-parse", "HEAD")
        self.args = os.path.join(self.dir.name, "gate-args")

    def run_step(self, workflow, cwd, **env):
        os.makedirs(os.path.join(cwd, "scripts"), exist_ok=True)
        stub = os.path.join(cwd, "scripts", "gate.sh")
        with open(stub, "w") as f:
            f.write(RECORD)
        os.chmod(stub, 0o755)
        full = {**os.environ, "BASE_REV": self.tip, "HEAD_REV": self.head, "GATE_ARGS": self.args, **env}
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", gate_step(workflow)],
                           cwd=cwd, env=full, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(self.args) as f:
            return f.read().splitlines()

    def test_bench_gate_measures_the_merge_base_against_the_head(self):
        got = self.run_step("bench-gate.yml", self.repo)
        self.assertEqual(got[:2], [self.fork, self.head])

    def test_runtime_gate_takes_the_crate_from_the_merge_base_and_the_head(self):
        pingmatrix = os.path.join(self.dir.name, "pingmatrix")
        got = self.run_step("runtime-gate.yml", pingmatrix, GITHUB_WORKSPACE=self.dir.name, CRATE="tokio",
                            SERVICE="ping-tokio-hyper")
        self.assertIn(f"BASE_SOURCE={self.repo}#{self.fork}", got)
        self.assertIn(f"HEAD_SOURCE={self.repo}#{self.head}", got)


if __name__ == "__main__":
    unittest.main()
