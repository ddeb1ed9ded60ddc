#!/usr/bin/env python3
"""Documentation checks: every relative link in a tracked Markdown file (outside code blocks)
points at a file or directory that exists (anchors are not checked), and the README stays a front door
(at most 250 lines). Prints one line per broken link; exit status 1 if any check failed."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
README_MAX_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_markdown():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.split()]


def main():
    failed = 0
    for md in tracked_markdown():
        if not md.is_file():
            continue
        fenced = False
        for n, line in enumerate(md.read_text().splitlines(), 1):
            # Code blocks are not Markdown: a trace line like `SYSCALL[1,2](56)` is no link.
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if not (md.parent / path).exists():
                    print(f"{md.relative_to(ROOT)}:{n}: broken link {target}")
                    failed += 1
    lines = len((ROOT / "README.md").read_text().splitlines())
    if lines > README_MAX_LINES:
        print(f"README.md: {lines} lines, more than {README_MAX_LINES}: move a chapter to docs/")
        failed += 1
    print(f"check-docs: {failed} problem(s), README {lines} lines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
