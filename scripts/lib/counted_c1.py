#!/usr/bin/env python3
"""The counted value of SERVICE's c1 cell in RUN's results.json, for the check scripts.

    counted_c1.py RUN SERVICE syscalls       # the server's syscalls/request median, 4 decimals
    counted_c1.py RUN SERVICE instructions   # instructions/request median, 1 decimal

Prints "unmeasured" where the run says so, "–" where there is no run, cell or value.
"""
import json
import os
import sys


def main(run, service, what):
    path = os.path.join(run, "results.json") if run else ""
    if not path or not os.path.isfile(path):
        return "–"
    cells = json.load(open(path))["cells"]
    cell = next((c for c in cells if c["service"] == service and c["level"] == "c1"), None)
    counted = (cell or {}).get("counted") or {}
    if what == "syscalls":
        stat, why, fmt = (counted.get("server") or {}).get("syscalls"), None, "{:.4f}"
    else:
        stat, why, fmt = counted.get("instructions"), counted.get("instructions_unmeasured"), "{:.1f}"
    if stat:
        return fmt.format(stat["median"])
    return "unmeasured" if why else "–"


if __name__ == "__main__":
    print(main(*sys.argv[1:4]))
