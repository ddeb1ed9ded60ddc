#!/usr/bin/env python3
"""The comment workflow's step (.github/workflows/gate-comment.yml), run as GitHub runs it
(bash -eo pipefail) with a stand-in `gh` that records its calls: one comment per service,
updated in place when the service's marker is already there, and nothing posted for an
artifact whose service name or pull request number is not one. Run: python3 -m unittest
discover -s scripts/lib -p 'test_*.py' (scripts/test.sh does)."""

import os
import subprocess
import tempfile
import unittest

from test_workflows import step

# Records each call; answers the comment listing with EXISTING (one id a line), if set.
GH = """#!/bin/sh
printf '%s\\n' "$*" >>"$GH_CALLS"
case "$*" in
  *"--paginate"*) [ -n "${EXISTING:-}" ] && printf '%s\\n' "$EXISTING" ;;
  *"body=@"*) f=${*##*body=@}; cp "${f%% *}" "$GH_CALLS.body" ;;
esac
exit 0
"""


class CommentStep(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.cwd = self.dir.name
        bin_dir = os.path.join(self.cwd, "bin")
        os.makedirs(bin_dir)
        gh = os.path.join(bin_dir, "gh")
        with open(gh, "w") as f:
            f.write(GH)
        os.chmod(gh, 0o755)
        self.path = bin_dir + os.pathsep + os.environ["PATH"]
        self.calls = os.path.join(self.cwd, "gh-calls")

    def artifact(self, service, pr, report="## Regression gate: FAIL\n"):
        d = os.path.join(self.cwd, "gates", f"pingmatrix-gate-{service}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "gate.md"), "w") as f:
            f.write(report)
        if pr is not None:
            with open(os.path.join(d, "pr.txt"), "w") as f:
                f.write(pr)

    def run_step(self, **env):
        if os.path.exists(self.calls):
            os.remove(self.calls)
        full = {**os.environ, "PATH": self.path, "GH_CALLS": self.calls, "REPO": "o/r",
                "GH_TOKEN": "x", "EVENT_PR": "", **env}
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                            step("gate-comment.yml", "Comment (")],
                           cwd=self.cwd, env=full, capture_output=True, text=True, timeout=60)
        calls = open(self.calls).read().splitlines() if os.path.exists(self.calls) else []
        return p, calls

    def test_one_comment_per_service_posted_then_updated_in_place(self):
        self.artifact("ping-epoll", "12\n")
        p, calls = self.run_step()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("repos/o/r/issues/12/comments", calls[0])
        self.assertTrue(calls[1].startswith("api -X POST repos/o/r/issues/12/comments"), calls)
        with open(self.calls + ".body") as f:
            body = f.read()
        self.assertTrue(body.startswith("<!-- pingmatrix-gate: ping-epoll -->\n## Regression gate: FAIL"), body)
        # A later run finds its marker and edits that comment; the event's number wins.
        p, calls = self.run_step(EXISTING="987", EVENT_PR="12")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(calls[1].startswith("api -X PATCH repos/o/r/issues/comments/987"), calls)

    def test_a_bad_number_or_name_from_an_artifact_posts_nothing_and_fails(self):
        for pr in ["12; rm -rf /", "-1", "", None]:
            self.artifact("ping-epoll", pr)
            p, calls = self.run_step()
            self.assertNotEqual(p.returncode, 0, pr)
            self.assertEqual(calls, [], pr)
            self.assertIn("no valid service name or pull request number", p.stderr)
        self.artifact("ping-epoll", "12")
        os.rename(os.path.join(self.cwd, "gates", "pingmatrix-gate-ping-epoll"),
                  os.path.join(self.cwd, "gates", "pingmatrix-gate-$(x)"))
        p, calls = self.run_step()
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
