#!/usr/bin/env python3
"""The results viewer in a real browser: headless Chromium (Debian's package) driven by
Playwright. Builds the site from results/ with target/debug/matrix, opens it from file://
and over HTTP on 127.0.0.1, and checks what a reader relies on:

- every page loads with no console error or page error;
- the numbers in the leaderboard equal results.json;
- sorting orders the rows, the filters drop exactly the services they name;
- keyboard: Tab reaches a row, arrows move, Enter opens the cell's detail (its repetitions);
- ✗ / † / ⚠ marks show their reasons on click, one meaning each (the legend README and results.md use);
- the compare view agrees with `matrix compare --format json` (ratio and verdict of every
  metric of every cell), "only changes" keeps exactly the better / worse rows, a refused
  pair says why;
- runs with failed, unsupported and churn cells, without calibration, and in an older
  shape (no run.json, no cell files) render and say what they lack;
- the default-matrix reference run's page is under 2 MB and opens in under 1 s;
- on the counted run, the counted columns (syscalls, context switches, instructions per
  request) equal results.json for every row, say "unmeasured" with the reason where a
  service was not counted, and sort; runs that did not count have no such columns;
- a counted board opens sorted by counted cost (instructions per request, services without
  one after them by syscalls; else syscalls), and the README headline's run opens at its
  ranking level in the headline's order (with or without #level in the link, saying why
  it opens there); an uncounted board opens sorted by req/s;
- charts carry their doubt and stay legible: on every committed run page (every tab) and in
  every committed SVG plot, no two text elements' boxes overlap; every latency line has its
  interval (the page's whiskers, the SVG spectra's bands) unless the caption says why not;
  no SVG line joins two load levels; every value axis has at least 4 labelled ticks; open
  loop tabs have no throughput chart;
- a fragment naming a tab or level the run lacks says so on the page; a profile's tab says
  what its CPU quota and memory limit do;
- the site's index stays small (each compare pair is a script of its own, loaded when it
  is picked) and the time to show a compare view is printed.

Screenshots of each view go to target/browser-test/ (gitignored). Exit 0 all passed, 1 a
check failed, 2 the environment is missing something (no chromium, no playwright).
Usage: scripts/ci/browser-test.py [--chromium PATH]
"""

import argparse
import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "target" / "debug" / "matrix"
ARTIFACTS = REPO / "target" / "browser-test"
# The default-matrix reference run (README's headline): the size and time limits apply to it.
REFERENCE = "2026-12-01T06-28-28Z-492c110"
PAIR = ("2026-11-30T14-06-29Z-14f462b", "2026-11-30T14-14-58Z-14f462b")
# A run that counted syscalls, context switches and instructions per request.
COUNTED_RUN = "2026-12-01T22-45-32Z-494f328"
COUNTED = (
    ("syscalls_per_request", lambda k: k["server"].get("syscalls"), lambda k: k["server"].get("syscalls_unmeasured")),
    ("ctx_switches_per_request", lambda k: k["server"].get("ctx_switches"), lambda k: None),
    ("instructions_per_request", lambda k: k.get("instructions"), lambda k: k.get("instructions_unmeasured")),
)
MAX_PAGE_BYTES = 2 * 1024 * 1024
MAX_OPEN_S = 1.0
# The index holds runs and histories, no compare pair: it grows with the runs, not their pairs.
MAX_INDEX_BYTES = 1024 * 1024

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def num(text):
    """A shown number ("12,345", "3.21", "1.36×", "—") as float, None for a dash."""
    t = text.strip().split(" ")[0].replace(",", "").rstrip("×")
    return None if t in ("", "—") else float(t)


def close(shown, want):
    """Equal to the precision the page shows (0, 1 or 2 decimals by magnitude)."""
    if want is None:
        return shown is None
    if shown is None:
        return False
    digits = 0 if abs(want) >= 100 else 1 if abs(want) >= 10 else 2
    return abs(shown - want) <= 0.5 * 10 ** -digits + 1e-9


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(Quiet, directory=str(root))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def matrix(*args, ok=(0,), cwd=None):
    p = subprocess.run([str(MATRIX), *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    if p.returncode not in ok:
        sys.exit(f"matrix {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def variants(tmp):
    """Run directories the committed runs lack: failed / unsupported cells, and an older
    shape (no run.json, no calibration or verdicts, no cell files for half the cells)."""
    src = REPO / "results" / REFERENCE
    failed = tmp / "variants" / "failed-cells"
    shutil.copytree(src, failed)
    res = json.loads((failed / "results.json").read_text())
    hit = {}
    # The cell files are edited and results.json summarised again from them: a result set
    # whose results.json does not summarise its cell files is refused at load.
    for c, status in zip(res["cells"][:2], ["failed", "unsupported"]):
        hit[c["key"]] = status
        cell = failed / "cells" / (c["key"] + ".json")
        cf = json.loads(cell.read_text())
        cf["status"], cf["reps"] = status, []
        cell.write_text(json.dumps(cf))
    matrix("report", str(failed), "--resummarize")
    old = tmp / "variants" / "older-shape"
    shutil.copytree(REPO / "results" / PAIR[0], old)
    (old / "run.json").unlink()
    res = json.loads((old / "results.json").read_text())
    for k in ("calibration", "verdicts", "baseline"):
        res.pop(k, None)
    (old / "results.json").write_text(json.dumps(res))
    for f in sorted((old / "cells").iterdir())[::2]:
        f.unlink()
    matrix("report", str(old), "--html")
    return failed, old, hit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    if not Path(args.chromium).exists():
        print(f"browser-test: no chromium at {args.chromium} (apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser-test: no playwright (pip install playwright)", file=sys.stderr)
        return 2
    if not MATRIX.exists():
        print(f"browser-test: build the runner first ({MATRIX} missing)", file=sys.stderr)
        return 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="browser-test-") as t:
        tmp = Path(t)
        site = tmp / "site"
        matrix("site", str(REPO / "results"), "--out", str(site))
        failed_run, old_run, hit = variants(tmp)
        # A site over the two variants: the older shape has no run.json, so matrix compare
        # refuses the pair — the one refusal the committed runs do not give.
        matrix("site", str(tmp / "variants"), "--out", str(tmp / "variant-site"))
        srv = serve(site)
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                try:
                    run_checks(browser, site, base, failed_run, old_run, hit)
                    not_served_checks(browser, base)
                    legibility_checks(browser, site, base)
                    refusal_checks(browser, tmp / "variant-site", old_run, failed_run)
                finally:
                    browser.close()
        finally:
            srv.shutdown()
    print(f"screenshots in {ARTIFACTS.relative_to(REPO)}/")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("browser-test: all checks passed")
    return 0


def page_with_errors(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append("request failed: " + r.url))
    return page, errors


def rows(page):
    return page.locator("#board tbody tr")


def not_served_checks(browser, base):
    """A committed run with services that do not serve a scenario's protocol (run.json's
    `not_applicable`): that scenario's tab lists each as "n/a: … does not serve …" under the
    board, and no row of the board is that service."""
    runs = []
    for run_json in sorted((REPO / "results").glob("*/run.json")):
        na = json.loads(run_json.read_text()).get("not_applicable") or []
        if na and (run_json.parent / "index.html").exists():
            runs.append((run_json.parent.name, na))
    check(runs, "a committed run has services that do not serve a scenario's protocol")
    for run, na in runs[-1:]:
        results = json.loads((REPO / "results" / run / "results.json").read_text())
        for scenario in sorted({n["scenario"] for n in na}):
            profile = next(c["profile"] for c in results["cells"] if c["scenario"] == scenario)
            page, errors = page_with_errors(browser)
            page.goto(f"{base}/{run}/index.html#tab=" + urllib.parse.quote(f"{scenario} · {profile}"))
            page.wait_for_selector("#board")
            shown = page.locator("#board ul.na li").all_inner_texts()
            want = [n for n in na if n["scenario"] == scenario]
            check(len(shown) == len(want) and all(f"n/a: {n['service']} does not serve {n['protocol']}" in t for n, t in zip(want, shown)),
                  f"{run} {scenario}: n/a listed for {[n['service'] for n in want]}: {shown}")
            board = " ".join(page.locator("#board tbody tr").all_inner_texts())
            check(not any(n["service"] + " " in board or board.endswith(n["service"]) for n in want), f"{run} {scenario}: no board row of a service that does not serve it")
            check(not errors, f"{run} {scenario}: no console errors {errors[:3]}")
            page.close()


def run_checks(browser, site, base, failed_run, old_run, hit):
    ref_dir = REPO / "results" / REFERENCE
    results = json.loads((ref_dir / "results.json").read_text())
    size = (ref_dir / "index.html").stat().st_size
    check(size < MAX_PAGE_BYTES, f"reference page is {size} bytes (< {MAX_PAGE_BYTES})")

    # Every run page of the site, over HTTP and from file://, with no errors. One tab for all
    # (a third of the time of a new one each; the viewer keeps no state between loads), its
    # errors counted afresh at each navigation.
    runs = sorted(p.parent.name for p in site.glob("*/index.html"))
    page, errors = page_with_errors(browser)
    for run in runs:
        for url in (f"{base}/{run}/index.html", (site / run / "index.html").as_uri()):
            errors.clear()
            page.goto(url)
            check(not errors and rows(page).count() > 0, f"{url.split(':')[0]} {run}: rows drawn, no console errors {errors[:3]}")
    page.close()

    # Open time of the reference page: navigation start to the board drawn, on the page's own
    # clock (performance.now() counts from navigation start; read in the page at the first
    # animation frame with rows), so Playwright's round trips on a loaded machine don't count.
    page, errors = page_with_errors(browser)
    times = []
    for _ in range(5):
        page.goto(f"{base}/{REFERENCE}/index.html")
        seen = page.wait_for_function(
            "() => document.querySelector('#board tbody tr') && (window.__drawn_ms ??= performance.now())",
            polling="raf",
        )
        times.append(seen.json_value() / 1000)
    nav = page.evaluate("() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; }")
    med = sorted(times)[len(times) // 2]
    check(med < MAX_OPEN_S, f"reference page opens in {med * 1000:.0f} ms median of 5 (load event {nav:.0f} ms; < {MAX_OPEN_S * 1000:.0f} ms)")
    page.screenshot(path=str(ARTIFACTS / "run-leaderboard.png"), full_page=False)

    # The numbers shown equal results.json (default tab and level, every row).
    tab = page.locator(".tabs button.active").inner_text()
    level = page.locator("#level").input_value()
    scenario, profile = [x.strip() for x in tab.split("·")]
    want = {c["service"]: c for c in results["cells"] if c["scenario"] == scenario and c["profile"] == profile and c["level"] == level}
    n = rows(page).count()
    check(n == len(want), f"{tab} {level}: {n} rows for {len(want)} cells in results.json")
    bad = []
    for i in range(n):
        r = rows(page).nth(i)
        key = r.get_attribute("data-key")
        c = next(c for c in results["cells"] if c["key"] == key)
        for col, v in (
            ("requests_per_s", c["requests_per_s"] and c["requests_per_s"]["mean"]),
            ("cpu_us_per_request", c["server_cpu_us_per_request"] and c["server_cpu_us_per_request"]["mean"]),
            ("latency_p50_us", c["latency"] and c["latency"]["p50_us"]),
            ("latency_p99_us", c["latency"] and c["latency"]["p99_us"]),
            ("startup_us", c["startup_us"] and c["startup_us"]["median"]),
        ):
            shown = num(r.locator(f'td[data-col="{col}"] .v').inner_text())
            if not close(shown, v):
                bad.append(f"{key} {col}: shown {shown}, results.json {v}")
    check(not bad, f"every number of {n} rows equals results.json {bad[:3]}")

    # Sorting: req/s descending by default, ascending after a click; p99 ascending.
    def column(col):
        return [num(x) for x in rows(page).locator(f'td[data-col="{col}"] .v').all_inner_texts()]

    v = column("requests_per_s")
    check(v == sorted(v, reverse=True), "sorted by req/s, highest first")
    page.locator('th button[data-key="requests_per_s"]').click()
    v = column("requests_per_s")
    check(v == sorted(v), "a click on req/s sorts lowest first")
    page.locator('th button[data-key="latency_p99_us"]').click()
    v = column("latency_p99_us")
    check(v == sorted(v), "p99 sorts lowest first")
    check("sort=latency_p99_us" in page.url, "the sort is in the URL")
    page.locator('th button[data-key="requests_per_s"]').click()

    # Filters: unticking an I/O driver drops exactly the services that start-up lines name.
    drivers = {}
    for f in (ref_dir / "cells").glob("*.json"):
        b = json.loads(f.read_text()).get("banner")
        if b:
            drivers[b["service"]] = b["io_driver"]
    before = rows(page).count()
    page.locator('#filter-noio input[value="io_uring"]').uncheck()
    left = [rows(page).nth(i).get_attribute("data-key").split("__")[0] for i in range(rows(page).count())]
    check(left and all(drivers[s] != "io_uring" for s in left) and len(left) == sum(1 for s in want if drivers[s] != "io_uring"),
          f"io_uring filter: {before} → {len(left)} rows, none io_uring")
    page.screenshot(path=str(ARTIFACTS / "run-filtered.png"))
    page.locator('#filter-noio input[value="io_uring"]').check()
    check(rows(page).count() == before, "re-ticking restores the rows")

    # Ties: rows sharing a band show the same rank.
    ranks = [x.strip() for x in rows(page).locator('td[data-col="band"]').all_inner_texts()]
    check(all(r.startswith("=") for r in ranks) and ranks == sorted(ranks, key=lambda r: int(r[1:])),
          f"rank bands are non-decreasing down the sorted board {ranks}")
    bands_under_every_sort(page, REFERENCE)

    # Marks: a ⚠ shows its reasons on click.
    sus = page.locator("#board .mark.suspect").first
    if sus.count():
        key = sus.locator("xpath=ancestor::tr").get_attribute("data-key")
        sus.click()
        reasons = next(c for c in results["cells"] if c["key"] == key)["suspect_reasons"]
        shown = page.locator(".pop li").all_inner_texts()
        check(shown == reasons, f"⚠ on {key} shows its {len(reasons)} reason(s)")
        page.screenshot(path=str(ARTIFACTS / "run-suspect-reasons.png"))
        sus.click()

    # Keyboard: focus the first row, ArrowDown, Enter opens that row's detail.
    rows(page).first.focus()
    page.keyboard.press("ArrowDown")
    key = page.evaluate("() => document.activeElement.dataset.key")
    second = rows(page).nth(1).get_attribute("data-key")
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail h2")
    cell = json.loads((ref_dir / "cells" / f"{key}.json").read_text())
    reps = page.locator("#reps tbody tr").count()
    check(key == second and reps == len(cell["reps"]), f"↓ then Enter opens {key}: {reps} repetitions of {len(cell['reps'])}")
    check(f"cell={key}" in page.url, "the open cell is in the URL")
    page.locator("#detail").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "run-cell-detail.png"), full_page=True)
    # Tab from the page start reaches the sort buttons and the rows.
    page.goto(f"{base}/{REFERENCE}/index.html")
    seen = set()
    for _ in range(60):
        page.keyboard.press("Tab")
        seen.add(page.evaluate("() => document.activeElement.tagName + '.' + (document.activeElement.className || '')"))
    check(any(s.startswith("BUTTON.sort") for s in seen) and any(s.startswith("TR") for s in seen), "Tab reaches sort buttons and rows")

    # Churn cells render with their verdict from results.json.
    page.locator('.tabs button[data-tab="churn · pinned"]').click()
    bad = []
    for i in range(rows(page).count()):
        r = rows(page).nth(i)
        c = next(c for c in results["cells"] if c["key"] == r.get_attribute("data-key"))
        shown = r.locator('td[data-col="churn"]').inner_text()
        if not c.get("churn") or not shown.startswith(c["churn"]["verdict"]):
            bad.append((c["key"], shown))
    check(rows(page).count() > 0 and not bad, f"churn tab shows each cell's churn verdict {bad[:2]}")
    page.screenshot(path=str(ARTIFACTS / "run-churn.png"))
    page.goto(f"{base}/{REFERENCE}/index.html#tab=ping%20%C2%B7%20pinned&level=c64")
    check(page.locator("#charts svg").count() == 3, "three charts drawn (throughput, latency spectrum, CPU bars)")
    page.locator("#charts").screenshot(path=str(ARTIFACTS / "run-charts.png"))
    check(not errors, f"no console errors on the reference page {errors[:3]}")
    counted_columns = [c for c, _, _ in COUNTED if page.locator(f'#board td[data-col="{c}"]').count()]
    check(not counted_columns, f"a run that did not count shows no counted column {counted_columns}")
    page.close()

    counted_checks(browser, base)
    chart_checks(browser, base)

    # Variants: failed and unsupported cells; an older shape with no run.json.
    for d, expect in ((failed_run, "did not complete"), (old_run, "no run.json")):
        page, errors = page_with_errors(browser)
        page.goto((d / "index.html").as_uri())
        missing = page.locator("#missing").inner_text() if page.locator("#missing").count() else ""
        check(not errors and expect in missing, f"{d.name}: renders, says '{expect}' {errors[:2]}")
        if d == old_run:
            check("no calibration" in missing and "no cells/<key>.json" in missing, f"{d.name}: says calibration and cell files are missing")
        else:
            for key, status in hit.items():
                tab = "{} · {}".format(*[key.split("__")[i] for i in (1, 3)])
                page.goto((d / "index.html").as_uri() + "#tab=" + tab.replace(" ", "%20") + "&level=" + key.split("__")[2])
                r = page.locator(f'#board tr[data-key="{key}"]')
                check(r.count() == 1 and "✗" in r.inner_text() and r.locator('td[data-col="requests_per_s"] .v').inner_text() == "—",
                      f"{status} cell {key}: shown with ✗ (did not complete, as results.md marks it) and no numbers")
        page.screenshot(path=str(ARTIFACTS / f"variant-{d.name}.png"), full_page=True)
        page.close()

    # The site: the index lists every run; the compare view agrees with matrix compare.
    page, errors = page_with_errors(browser)
    page.goto(f"{base}/index.html")
    n = page.locator("#runs tbody tr").count()
    check(n == len(runs), f"index lists {n} runs of {len(runs)}")
    page.screenshot(path=str(ARTIFACTS / "site-index.png"), full_page=True)
    size = (site / "index.html").stat().st_size
    check(size < MAX_INDEX_BYTES, f"site index is {size} bytes (< {MAX_INDEX_BYTES}); {len(list(site.glob('compare/**/*.js')))} pair scripts beside it")
    old, new = PAIR
    # Time to show a compare view, from file:// (where the pair's script must load too):
    # navigation start to its rows drawn, median of 5 fresh pages.
    times = []
    for _ in range(5):
        p2, errs = page_with_errors(browser)
        t0 = time.perf_counter()
        p2.goto((site / "index.html").as_uri() + f"#view=compare&kind=runs&old={old}&new={new}")
        p2.wait_for_selector("#compare-table tbody tr")
        times.append(time.perf_counter() - t0)
        check(not errs, f"compare view from file:// with no console errors {errs[:2]}")
        p2.close()
    print(f"info compare view shown in {sorted(times)[2] * 1000:.0f} ms median of 5 from file:// ({', '.join(f'{t * 1000:.0f}' for t in times)} ms)")
    page.goto(f"{base}/index.html#view=compare&kind=runs&old={old}&new={new}")
    page.wait_for_selector("#compare-table tbody tr")
    p = matrix("compare", str(REPO / "results" / old), str(REPO / "results" / new), "--format", "json", ok=(0, 1, 2))
    if p.returncode == 2 and not p.stdout.strip():
        p = matrix("compare", str(REPO / "results" / old), str(REPO / "results" / new), "--format", "json", "--force", ok=(0, 1, 2))
    cmp = json.loads(p.stdout)
    want = {(c["key"], m["metric"]): m for c in cmp["cells"] for m in c["metrics"]}
    trs = page.locator("#compare-table tbody tr")
    got = {}
    for i in range(trs.count()):
        tr = trs.nth(i)
        got[(tr.get_attribute("data-cell"), tr.get_attribute("data-metric"))] = (
            tr.locator('td[data-col="ratio"]').inner_text(), tr.locator('td[data-col="verdict"]').inner_text())
    bad = [k for k, m in want.items() if k not in got
           or got[k][1] != m["verdict"].replace("_", " ")
           or (m["difference"] and abs(num(got[k][0]) - m["difference"]["ratio"]) > 0.0005)
           or (not m["difference"] and got[k][0] != "—")]
    check(len(got) == len(want) and not bad, f"compare view: {len(got)} rows, every ratio and verdict as matrix compare --format json ({len(want)}) {bad[:3]}")
    page.screenshot(path=str(ARTIFACTS / "site-compare.png"), full_page=True)
    page.locator("#only-changes").check()
    changes = sum(1 for m in want.values() if m["verdict"] in ("better", "worse"))
    check(trs.count() == changes and "only=1" in page.url, f"only changes: {trs.count()} rows, {changes} better/worse in matrix compare")
    md = page.locator("#markdown textarea").input_value()
    # From inside results/ so the sides are labelled as the site labels them (by run id).
    p = matrix("compare", old, new, "--format", "markdown", ok=(0, 1, 2), cwd=REPO / "results")
    check(md == p.stdout or (p.returncode == 2 and md), "Markdown export is matrix compare --format markdown's text")
    # A refused pair: the reference run against the quick run of another matrix.
    page.goto(f"{base}/index.html#view=compare&kind=runs&old={PAIR[1]}&new={REFERENCE}")
    page.wait_for_selector("#compare-table")
    p = matrix("compare", str(REPO / "results" / PAIR[1]), str(ref_dir), "--format", "json", ok=(0, 1, 2))
    refused = page.locator("#refused").count() == 1
    check(refused == (p.returncode == 2), f"refusal shown exactly when matrix compare refuses (exit {p.returncode})")
    page.goto(f"{base}/index.html#view=compare&kind=services&run={REFERENCE}&a=ping-tokio-hyper&b=ping-epoll")
    page.wait_for_selector("#compare-table")
    check(page.locator("#compare-table tbody tr").count() > 0, "two services of one run compare")
    page.screenshot(path=str(ARTIFACTS / "site-compare-services.png"), full_page=True)
    page.goto(f"{base}/index.html#view=history&hcell=ping-tokio-hyper/ping/c64/pinned")
    check(page.locator("#history svg").count() == 1 and page.locator("#history tbody tr").count() >= 2, "history of a cell across runs drawn")
    page.screenshot(path=str(ARTIFACTS / "site-history.png"), full_page=True)
    history_break_checks(page, base)
    check(not errors, f"no console errors on the site {errors[:3]}")
    page.close()



def refusal_checks(browser, site, old_run, new_run):
    """A pair matrix compare refuses: the view shows every reason it gives, then the forced
    comparison."""
    p = matrix("compare", str(old_run), str(new_run), "--format", "json", ok=(2,))
    reasons = [line.strip()[2:] for line in p.stderr.splitlines() if line.strip().startswith("- ")]
    page, errors = page_with_errors(browser)
    old_id, new_id = (json.loads((d / "results.json").read_text())["run_id"] for d in (old_run, new_run))
    page.goto((site / "index.html").as_uri() + f"#view=compare&kind=runs&old={old_id}&new={new_id}")
    page.wait_for_selector("#compare-table")
    shown = page.locator("#refused li").all_inner_texts()
    check(reasons and shown == reasons, f"a refused pair shows matrix compare's {len(reasons)} reason(s) {shown}")
    check(page.locator("#compare-table tbody tr").count() > 0, "and the forced comparison under them")
    page.screenshot(path=str(ARTIFACTS / "site-compare-refused.png"), full_page=False)
    check(not errors, f"no console errors on the refused pair {errors[:3]}")
    page.close()


def counted_checks(browser, base):
    """The counted run's leaderboard: each counted column's value is results.json's median
    (the repetitions' range below it, as README and results.md), "unmeasured" carries the
    reason, and the column sorts."""
    results = json.loads((REPO / "results" / COUNTED_RUN / "results.json").read_text())
    by_key = {c["key"]: c for c in results["cells"]}
    page, errors = page_with_errors(browser)
    for level in sorted({c["level"] for c in results["cells"] if c.get("counted")}):
        page.goto(f"{base}/{COUNTED_RUN}/index.html#level={level}")
        page.wait_for_selector("#board tbody tr")
        counted_default_order(page, results, level, COUNTED_RUN)
        n = rows(page).count()
        bad, shown_cols = [], []
        for col, stat, why in COUNTED:
            want_col = any(c.get("counted") and (stat(c["counted"]) or why(c["counted"])) for c in results["cells"] if c["level"] == level)
            has_col = page.locator(f'#board th button[data-key="{col}"]').count() == 1
            if want_col != has_col:
                bad.append(f"{level} {col}: column shown {has_col}, results.json has it {want_col}")
            if not has_col:
                continue
            shown_cols.append(col)
            for i in range(n):
                r = rows(page).nth(i)
                c = by_key[r.get_attribute("data-key")]
                k = c.get("counted") or {}
                st, reason = (stat(k), why(k)) if k else (None, None)
                td = r.locator(f'td[data-col="{col}"]')
                if st:
                    shown = num(td.locator(".v").inner_text())
                    ci = td.locator(".ci").inner_text() if td.locator(".ci").count() else ""
                    lo, hi = [num(x) for x in ci.split("–")] if "–" in ci else (None, None)
                    # As README's headline and results.md: the median, the range under it.
                    lo_want, hi_want = (st["min"], st["max"]) if st["n"] > 1 else (None, None)
                    if not (close(shown, st["median"]) and close(lo, lo_want) and close(hi, hi_want)):
                        bad.append(f"{c['key']} {col}: shown {shown} [{ci}], results.json median {st['median']} [{st['min']}, {st['max']}]")
                elif reason:
                    m = td.locator(".mark.unmeasured")
                    if not (m.count() == 1 and m.inner_text().startswith("unmeasured") and m.get_attribute("title") == reason):
                        bad.append(f"{c['key']} {col}: not 'unmeasured' with '{reason}'")
                elif td.inner_text().strip() != "—":
                    bad.append(f"{c['key']} {col}: shown '{td.inner_text()}' for no count")
        check(shown_cols and not bad, f"counted run {level}: {', '.join(shown_cols)} on {n} rows equal results.json {bad[:3]}")
        if level == "c1":
            page.screenshot(path=str(ARTIFACTS / "run-counted.png"), full_page=False)
            # Sorting by a counted column: measured values lowest first, unmeasured last.
            for col in shown_cols:
                page.locator(f'th button[data-key="{col}"]').click()
                tds = rows(page).locator(f'td[data-col="{col}"]')
                v = [num(tds.nth(i).locator(".v").inner_text()) if tds.nth(i).locator(".v").count() else None for i in range(tds.count())]
                measured = [x for x in v if x is not None]
                check(measured and measured == sorted(measured) and v[: len(measured)] == measured and f"sort={col}" in page.url,
                      f"a click on {col} sorts lowest first, unmeasured last {v}")
                page.locator(f'th button[data-key="{col}"]').click()
                v = [num(tds.nth(i).locator(".v").inner_text()) if tds.nth(i).locator(".v").count() else None for i in range(tds.count())]
                measured = [x for x in v if x is not None]
                check(measured == sorted(measured, reverse=True), f"a second click on {col} sorts highest first {v}")
            ranks = [x.strip() for x in rows(page).locator('td:first-child').all_inner_texts()]
            check(any(r.startswith("=") for r in ranks), f"rank bands drawn for a counted metric {ranks}")
            page.locator('th button[data-key="instructions_per_request"]').click()
            m = page.locator("#board .mark.unmeasured").first
            m.click()
            check(page.locator(".pop li").count() == 1 and "Valgrind" in page.locator(".pop li").inner_text(), "'unmeasured' shows its reason on click")
            page.screenshot(path=str(ARTIFACTS / "run-counted-sorted.png"), full_page=False)
    # README's headline ranks its counted run; the run's page opens at that level in that order.
    block = (REPO / "README.md").read_text().split("<!-- pingmatrix:reference:begin -->")[1].split("<!-- pingmatrix:reference:end -->")[0]
    run = block.split("Run `")[1].split("`")[0]
    level = block.split("Ranked by counted cost at ")[1].split(":")[0]
    # The ranked table's rows: a place ("1", "2=", "–") first (the h2c table after it has none).
    ranked = [line.split(" | ")[1] for line in block.splitlines()
              if line.startswith("| ") and re.fullmatch(r"\d+=?|–", line.split(" | ")[0][2:].strip())]
    # With no fragment at all it opens at that level too, and says why.
    page.goto(f"{base}/{run}/index.html")
    page.wait_for_selector("#board tbody tr")
    note = page.locator("#level-note").inner_text() if page.locator("#level-note").count() else ""
    check(page.locator("#level").input_value() == level and "README" in note,
          f"{run} opens at README's ranking level {level} and says so: {page.locator('#level').input_value()} {note[:100]}")
    page.goto(f"{base}/{run}/index.html#level={level}")
    page.wait_for_selector("#board tbody tr")
    counted_default_order(page, json.loads((REPO / "results" / run / "results.json").read_text()), level, run)
    shown = [rows(page).nth(i).get_attribute("data-key").split("__")[0] for i in range(rows(page).count())]
    check(ranked and shown == ranked, f"{run} {level} opens in the README headline's order {shown}")
    page.screenshot(path=str(ARTIFACTS / "run-counted-default.png"), full_page=False)
    bands_under_every_sort(page, f"{run} {level}")
    check(not errors, f"no console errors on the counted run's page {errors[:3]}")
    page.close()


FEW_REPS_RUN = "2026-12-02T03-42-59Z-22f7cf4"  # two repetitions a cell


def chart_checks(browser, base):
    """Charts that cannot lie: no negative axis tick and no whisker below the axis's zero on a
    run's page (req/s, times and counts are never negative); no whisker drawn from fewer than
    3 repetitions, and the caption says so."""
    page, errors = page_with_errors(browser)
    for run in (REFERENCE, FEW_REPS_RUN):
        n = {(c.get("requests_per_s") or {}).get("n") for c in json.loads((REPO / "results" / run / "results.json").read_text())["cells"]} - {None}
        page.goto(f"{base}/{run}/index.html")
        page.wait_for_selector("#charts svg")
        md_trust = (REPO / "results" / run / "results.md").read_text().splitlines()[2]
        check(md_trust.startswith("Machine: ") and page.locator("#trust").inner_text() == md_trust,
              f"{run}: the page opens with results.md's verdict on the machine: {md_trust[:80]}")
        charts = page.evaluate("""() => [...document.querySelectorAll('#charts figure')].map((f) => {
          const s = f.querySelector('svg'), num = (e, a) => +e.getAttribute(a);
          const grid = [...s.querySelectorAll('line.grid')].map((l) => num(l, 'y1'));
          const bars = [...s.querySelectorAll('rect')].map((r) => num(r, 'x'));
          const w = [...s.querySelectorAll('line.whisker')];
          return {
            caption: f.querySelector('figcaption').textContent,
            ticks: [...s.querySelectorAll('text.tick')].map((t) => t.textContent),
            whiskers: w.length,
            below: w.filter((l) => grid.length ? Math.max(num(l, 'y1'), num(l, 'y2')) > Math.max(...grid) + 0.5
                                               : Math.min(num(l, 'x1'), num(l, 'x2')) < Math.min(...bars) - 0.5).length,
          };
        })""")
        neg = [t for c in charts for t in c["ticks"] if t.strip()[:1] in ("-", "\u2212")]
        check(charts and not neg, f"{run}: no negative axis tick {neg[:3]}")
        check(all(c["below"] == 0 for c in charts), f"{run}: no whisker below zero {[c['caption'] for c in charts if c['below']]}")
        if min(n) < 3:
            with_ci = [c for c in charts if "fewer than 3 repetitions" in c["caption"]]
            check(with_ci and all(c["whiskers"] == 0 for c in with_ci),
                  f"{run} (n = {sorted(n)}): no whisker, and the caption says why {[c['caption'] for c in charts]}")
        else:
            check(any(c["whiskers"] for c in charts) and not any("fewer than 3" in c["caption"] for c in charts),
                  f"{run} (n = {sorted(n)}): whiskers drawn")
        if run == FEW_REPS_RUN:
            page.locator("#charts").screenshot(path=str(ARTIFACTS / "run-charts-two-reps.png"))
    check(not errors, f"no console errors on the chart pages {errors[:3]}")
    page.close()


# Every text element's box in an <svg>, and pairs of them that overlap (by more than a pixel
# each way: touching boxes are fine).
OVERLAPS_JS = """(root) => {
  const boxes = [...root.querySelectorAll('text')].filter((t) => t.textContent.trim())
    .map((t) => { const r = t.getBoundingClientRect(); return { t: t.textContent.trim(), l: r.left, r: r.right, tp: r.top, b: r.bottom }; })
    .filter((b) => b.r > b.l && b.b > b.tp);
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], c = boxes[j];
    if (Math.min(a.r, c.r) - Math.max(a.l, c.l) > 1 && Math.min(a.b, c.b) - Math.max(a.tp, c.tp) > 1) out.push(a.t + ' / ' + c.t);
  }
  return out;
}"""


# Each figure of the page's charts: its caption, how many charts it holds, the overlapping
# labels of its chart, its kind, each latency line's points and whiskers, its value ticks.
FIGURES_JS = """() => [...document.querySelectorAll('#charts figure')].map((f) => {
  const svgs = f.querySelectorAll('svg');
  const cap = f.querySelector('figcaption');
  return {
    caption: cap ? cap.innerText : null,
    svgs: svgs.length,
    overlaps: svgs.length === 1 ? (""" + OVERLAPS_JS + """)(svgs[0]) : [],
    kind: f.getAttribute('data-kind'),
    lines: [...f.querySelectorAll('polyline[data-series]')].map((l) => {
      const n = l.getAttribute('data-series');
      return [n, l.getAttribute('points').trim().split(/\\s+/).length,
              [...f.querySelectorAll('line.whisker')].filter((w) => w.getAttribute('data-series') === n).length];
    }),
    ticks: f.querySelectorAll('svg text.tick').length,
  };
})"""

PROFILED_RUN = "2026-12-04T06-11-06Z-7357b8a"  # pinned and k8s-small (0.2 CPU, 400 MiB)


def legibility_checks(browser, site, base):
    """Charts a reader can read and trust: see the module docstring."""
    page, errors = page_with_errors(browser)
    runs = sorted(p.parent.name for p in site.glob("*/index.html"))
    overlaps, bare, few_ticks, open_thr, figures = [], [], [], [], 0
    for run in runs:
        page.goto(f"{base}/{run}/index.html")
        page.wait_for_selector("#board")
        tabs = [b.get_attribute("data-tab") for b in page.locator("nav.tabs button").all()]
        for tab in tabs:
            page.locator(f'nav.tabs button[data-tab="{tab}"]').click()
            # Every figure of the tab read in one call (a round trip per figure and property
            # took most of this loop's time).
            for f in page.evaluate(FIGURES_JS):
                figures += 1
                if f["caption"] is None or f["svgs"] != 1:
                    raise RuntimeError(f"{run} {tab}: a figure without its caption or one chart: {f}")
                caption = f["caption"]
                overlaps += [(run, tab, caption[:40], o) for o in f["overlaps"]]
                if f["kind"] == "latency":
                    bare += [(run, tab, n) for n, pts, w in f["lines"] if w < pts and "none where one repetition" not in caption]
                    ticks = f["ticks"] - 5  # the five percentile labels
                    if ticks < 4:
                        few_ticks.append((run, tab, caption[:40], ticks))
                if "Throughput" in caption and tab.startswith("ping-open"):
                    open_thr.append((run, tab))
    check(figures > 50 and not overlaps, f"no two chart labels overlap on {len(runs)} run pages ({figures} charts) {overlaps[:3]}")
    check(not bare, f"every latency line on the pages has its whiskers (or the caption says why not) {bare[:3]}")
    check(not few_ticks, f"every latency chart on the pages has at least 4 labelled value ticks {few_ticks[:3]}")
    check(not open_thr, f"open-loop tabs draw no throughput chart {open_thr[:3]}")

    # The committed SVG plots, as results.md shows them.
    svgs = sorted((REPO / "results").glob("*/plots/*.svg"))
    overlaps, bare, joined, few = [], [], [], []
    for f in svgs:
        page.goto(f.as_uri())
        name = f"{f.parent.parent.name}/{f.name}"
        # One call per plot: its overlapping labels, its text, lines, bands and value-axis
        # labels (the ones ending in a time unit).
        info = page.evaluate("""() => ({
          overlaps: (""" + OVERLAPS_JS + """)(document.documentElement),
          title: [...document.querySelectorAll('text')].map((t) => t.textContent).join(' | '),
          lines: [...document.querySelectorAll('polyline')].map((l) => l.getAttribute('points').trim().split(/\\s+/).length),
          bands: document.querySelectorAll('polygon').length,
          time_labels: [...document.querySelectorAll('text')].filter((t) => /^[0-9.,]+ ?(µs|ms|s)$/.test(t.textContent.trim())).length,
        })""")
        overlaps += [(name, o) for o in info["overlaps"]]
        long_lines = [n for n in info["lines"] if n > 2]
        if f.name.startswith("latency-") and "no band" not in info["title"] and info["bands"] < len(long_lines):
            bare.append((name, len(long_lines), info["bands"]))
        if f.name.startswith(("throughput-", "open-loop-")) and long_lines:
            joined.append(name)
        if f.name.startswith(("latency-", "open-loop-")) and info["time_labels"] < 4:
            few.append((name, info["time_labels"]))
    check(len(svgs) > 20 and not overlaps, f"no two labels overlap in the {len(svgs)} committed SVG plots {overlaps[:3]}")
    check(not bare, f"every latency line in the committed SVG spectra has its band {bare[:3]}")
    check(not joined, f"no line joins two load levels in the committed SVG plots {joined[:3]}")
    check(not few, f"every committed latency SVG has at least 4 labelled value ticks {few[:3]}")

    # A fragment naming what the run lacks says so.
    page.goto(f"{base}/{REFERENCE}/index.html#tab=ping/pinned&level=c3")
    page.wait_for_selector("#board")
    note = page.locator("#fragment-note").inner_text() if page.locator("#fragment-note").count() else ""
    check("ping/pinned" in note and "c3" in note and "does not have" in note, f"a link to a missing tab and level says so: {note[:160]}")
    page.screenshot(path=str(ARTIFACTS / "run-fragment-missing.png"), full_page=False)
    # A quota'd profile is explained beside its board, with its settings from the matrix file.
    page.goto(f"{base}/{PROFILED_RUN}/index.html#tab=json%20%C2%B7%20k8s-small")
    page.wait_for_selector("#board")
    note = page.locator("#profile-note").inner_text() if page.locator("#profile-note").count() else ""
    check("CPU quota 0.2" in note and "400 MiB" in note and "20 ms of every 100 ms" in note, f"the k8s-small tab says what its quota does: {note[:120]}")
    page.screenshot(path=str(ARTIFACTS / "run-profile-note.png"), full_page=False)
    check(not errors, f"no console errors on the legibility pages {errors[:3]}")
    page.close()


def bands_under_every_sort(page, run):
    """Every sortable column, clicked: where the rank column shows bands (or places), they
    never go back down the board best-first, nor up worst-first."""
    keys = [b.get_attribute("data-key") for b in page.locator("#board th button.sort").all()]
    bad, banded = [], 0
    for key in keys:
        for click in (1, 2):
            page.locator(f'#board th button[data-key="{key}"]').click()
            asc = page.locator(f'#board th:has(button[data-key="{key}"])').get_attribute("aria-sort") == "ascending"
            ranks = [x.strip() for x in rows(page).locator("td:first-child").all_inner_texts()]
            nums = [int(r.lstrip("=").split("=")[0].split(" ")[0]) for r in ranks if r != "—"]
            if not nums:
                continue
            banded += 1
            m = page.locator(f'#board th:has(button[data-key="{key}"]) button').get_attribute("title") or ""
            best_first = nums[0] == min(nums)
            if nums != sorted(nums, reverse=not best_first):
                bad.append((key, click, asc, ranks))
    check(banded >= 4 and not bad, f"{run}: bands stay ordered under every sort ({banded} banded sorts of {2 * len(keys)}) {bad[:2]}")


def history_break_checks(page, base):
    """The history line breaks exactly where matrix compare would not set a run beside the
    one before it (refused, or the cell's verdicts withheld), and says why."""
    cell = "ping-tokio-hyper/ping/c64/pinned"
    page.goto(f"{base}/index.html#view=history&hcell={cell}")
    page.wait_for_selector("#history svg")
    runs = [t.strip() for t in page.locator("#history tbody tr td:first-child").all_inner_texts()]
    key = cell.replace("/", "__")
    want = 0
    for old, new in zip(runs, runs[1:]):
        p = matrix("compare", str(REPO / "results" / old), str(REPO / "results" / new), "--format", "json", ok=(0, 1, 2))
        if p.returncode == 2 and not p.stdout.strip():
            want += 1
            continue
        c = next((c for c in json.loads(p.stdout)["cells"] if c["key"] == key), None)
        want += bool(c and c.get("not_comparable"))
    breaks = page.locator("#history svg line.break")
    titles = [breaks.nth(i).locator("title").text_content() for i in range(breaks.count())]
    check(len(runs) > 2 and breaks.count() == want and all("not comparable" in t for t in titles),
          f"history of {cell} over {len(runs)} runs breaks at the {want} place(s) matrix compare would not join: {breaks.count()} {titles[:2]}")
    caption = page.locator("#history figcaption").inner_text()
    check((FEW_REPS_RUN in runs) == ("fewer than 3 repetitions" in caption), f"the history says where it draws no interval: {caption}")
    page.screenshot(path=str(ARTIFACTS / "site-history-breaks.png"), full_page=True)


def counted_default_order(page, results, level, run):
    """Before any click, a counted board opens in its rank by counted cost, lowest first:
    services with an instruction count first, and none of them after one whose whole range
    over the repetitions lies below its own; then the rest by syscalls per request; uncounted
    rows last. The rank column shows the headline's places (2=)."""
    by_key = {c["key"]: c for c in results["cells"]}
    keys = [rows(page).nth(i).get_attribute("data-key") for i in range(rows(page).count())]

    def stat(k, col):
        c = (by_key[k].get("counted") or {})
        return c.get("instructions") if col == "instructions" else c.get("server", {}).get("syscalls")

    if not any(stat(k, "instructions") or stat(k, "syscalls") for k in keys):
        return
    th = page.locator('#board th:has(button[data-key="counted_cost"])')
    check(th.count() == 1 and th.get_attribute("aria-sort") == "ascending" and "sort=" not in page.url,
          f"{run} {level}: opens in rank by counted cost, lowest first")
    names = [k.split("__")[0] for k in keys]
    ins = [stat(k, "instructions") for k in keys]
    sys_ = [stat(k, "syscalls") for k in keys]
    has = [i is not None for i in ins]
    check(has == sorted(has, reverse=True), f"{run} {level}: instruction counts before the rest {names}")
    apart = [(names[i], names[j]) for i in range(len(keys)) for j in range(i + 1, len(keys))
             if ins[i] and ins[j] and ins[i]["min"] > ins[j]["max"]]
    check(not apart, f"{run} {level}: no service after one its instructions set below it {apart}")
    rest = [s_["median"] for s_, h in zip(sys_, has) if not h and s_]
    check(rest == sorted(rest), f"{run} {level}: services without instructions by syscalls {names}")
    places = [page.locator(f'#board tr[data-key="{k}"] td[data-col="counted_cost"]').inner_text().strip() for k in keys]
    check(all(p == "—" or p[0].isdigit() for p in places) and places[0].startswith("1"),
          f"{run} {level}: the rank column shows the places {places}")


if __name__ == "__main__":
    sys.exit(main())
