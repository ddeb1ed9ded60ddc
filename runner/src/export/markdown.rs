//! results.md: one page a human reads. It leads with the metrics valid on any machine
//! (server CPU per request and latency at equal offered load), then throughput tables
//! (services as rows, load levels as columns) with generator-saturated cells marked.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::results::group::{self, CEILING, Group};
use crate::results::schema::{CellStatus, CellSummary, ResultsFile, RunRecord};
use crate::results::units::{mib_cell, micros_cell, rate_cell, rate_with_ci};

/// Marks: † generator saturated, ⚠ suspect, ✗ failed, n/a unsupported.
fn marks(c: &CellSummary) -> String {
    let mut m = String::new();
    if c.generator_saturated {
        m.push('†');
    }
    if c.suspect {
        m.push('⚠');
    }
    m
}

fn bad_status(c: &CellSummary) -> Option<&'static str> {
    match c.status {
        Some(CellStatus::Failed) => Some("✗ failed"),
        Some(CellStatus::Unsupported) => Some("n/a (unsupported)"),
        Some(CellStatus::Interrupted) => Some("interrupted"),
        _ if c.n == 0 => Some("–"),
        _ => None,
    }
}

/// " (1.12× epoll)": CPU per request against the no-runtime ceiling, when the run has it.
fn ceiling(g: &Group, c: &CellSummary) -> String {
    match g.ceiling_ratio(c) {
        Some(r) => format!(" ({r:.2}× epoll)"),
        _ => String::new(),
    }
}

fn closed_cell(g: &Group, c: &CellSummary) -> String {
    if let Some(s) = bad_status(c) {
        return s.into();
    }
    let mut s = String::new();
    if let Some(r) = &c.requests_per_s {
        s += &rate_with_ci(r);
    }
    if let Some(l) = &c.latency {
        let _ = write!(s, " · p99 {}", micros_cell(l.p99_us as f64));
    }
    if let Some(cpu) = &c.server_cpu_us_per_request {
        let _ = write!(s, " · {:.1} µs/req{}", cpu.mean, ceiling(g, c));
    }
    s + &marks(c)
}

fn open_cell(g: &Group, c: &CellSummary) -> String {
    if let Some(s) = bad_status(c) {
        return s.into();
    }
    let mut s = String::new();
    if let Some(cpu) = &c.server_cpu_us_per_request {
        let _ = write!(s, "{:.1} µs/req{}", cpu.mean, ceiling(g, c));
    }
    if let Some(l) = &c.latency {
        let _ = write!(
            s,
            " · p50 {} · p99 {}",
            micros_cell(l.p50_us as f64),
            micros_cell(l.p99_us as f64)
        );
    }
    s + &marks(c)
}

/// A scenario's table: one row per service that ran it, then one per service that does not
/// serve its protocol ("n/a: … does not serve h2c" in every level's column).
fn table(out: &mut String, g: &Group, run: &RunRecord, f: fn(&Group, &CellSummary) -> String) {
    let levels = g.levels();
    let protocol = run
        .plan
        .iter()
        .find(|c| c.scenario == g.scenario && !c.protocol.is_http11())
        .map_or(String::new(), |c| format!(" · {}", c.protocol.name()));
    let _ = writeln!(
        out,
        "### {}{protocol} · profile {}\n",
        g.scenario, g.profile
    );
    let _ = writeln!(out, "| service | {} |", levels.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(levels.len()));
    for s in g.services() {
        let row: Vec<String> = levels
            .iter()
            .map(|l| g.cell(&s, l).map_or_else(|| "–".into(), |c| f(g, c)))
            .collect();
        let _ = writeln!(out, "| {s} | {} |", row.join(" | "));
    }
    for na in run
        .not_applicable
        .iter()
        .filter(|n| n.scenario == g.scenario)
    {
        let _ = writeln!(out, "| {} | {} |", na.service, na.row(levels.len()));
    }
    let _ = writeln!(out);
    tls_line(out, g);
}

/// Under a TLS scenario's table: what the handshakes settled on (as the generator saw them)
/// and each service's connection set-up (TCP + handshake), apart from request latency.
fn tls_line(out: &mut String, g: &Group) {
    let Some(t) = g.cells.iter().find_map(|c| c.tls.as_ref()) else {
        return;
    };
    let setups: Vec<String> = g
        .cells
        .iter()
        .filter_map(|c| {
            let s = c.connection_setup_p50_us.as_ref()?;
            Some(format!(
                "{} {} ({})",
                c.service,
                crate::results::units::micros_brief(s.median),
                c.level
            ))
        })
        .collect();
    let _ = writeln!(
        out,
        "TLS: {} · {} · {} · ALPN {} · server key {}. Connection set-up (TCP + handshake), \
         median of the repetitions' p50: {}.\n",
        t.version,
        t.suite,
        t.key_exchange,
        t.alpn,
        t.server_key,
        if setups.is_empty() {
            "not recorded".to_string()
        } else {
            setups.join(" · ")
        }
    );
}

/// `runtimes`: service → "runtime version / io driver" from its start-up line.
pub fn render(
    run: &RunRecord,
    res: &ResultsFile,
    runtimes: &BTreeMap<String, String>,
    answers: &[crate::results::answers::Answer],
    instruction_requests: Option<(u64, u64)>,
) -> Vec<u8> {
    let mut o = String::new();
    let _ = writeln!(o, "# pingmatrix results — {}\n", run.run_id);
    let _ = writeln!(o, "{}\n", crate::results::trust::line(res, Some(run)));
    if !answers.is_empty() {
        let _ = writeln!(o, "## The answers\n");
        for a in answers {
            let _ = writeln!(o, "{}", a.line());
        }
        let _ = writeln!(
            o,
            "\nEach answer is the services the run cannot tell from the best one by that measure (band 1); \"cannot be told apart here\" when that is every service. MDE: the smallest difference this run detects at 95 % confidence and 80 % power (its own A/A calibration).\n"
        );
    }
    header(&mut o, run, res);
    let used = crate::results::group::first_seen(res.cells.iter().map(|c| &c.profile));
    super::profiles::section(&mut o, &run.config_toml, &used);
    how_to_read(&mut o, res);
    super::verdicts::calibration(&mut o, res);
    super::verdicts::against_baseline(&mut o, res);
    super::variants::section(&mut o, run);
    load_tables(&mut o, run, res);
    super::counted::section(&mut o, run, res, instruction_requests);
    super::attribution::section(&mut o, res);
    super::verdicts::repetitions(&mut o, res);
    super::churn::section(&mut o, res);
    startup_and_memory(&mut o, res, runtimes);
    startup_floor(&mut o, run);
    machine_floor(&mut o, run);
    drift(&mut o, res);
    suspects(&mut o, res);
    let _ = writeln!(
        o,
        "Per-cell detail (every repetition's full generator report, samples, limits): `cells/<key>.json`; environment and plan: `run.json`."
    );
    o.into_bytes()
}

/// Status, machine and source in one paragraph.
fn header(o: &mut String, run: &RunRecord, res: &ResultsFile) {
    let e = &run.environment;
    let _ = writeln!(
        o,
        "Status **{:?}**, {} cells ({} suspect, {} failed){}. Machine: {} × {} logical CPUs, {} RAM, kernel {}, {}, cgroup {}. Source: {}{}. {}.\n",
        res.status,
        res.cells.len(),
        res.suspect_cells,
        res.failed_cells,
        if run.quick { ", `--quick` subset" } else { "" },
        e.hardware.cpu_model,
        e.hardware.logical_cpus,
        mib_cell(e.hardware.memory_total_bytes as f64),
        e.os.kernel,
        e.hardware.virtualization,
        e.cgroup.version,
        e.source
            .git_commit
            .as_deref()
            .map_or("unknown commit", |c| &c[..c.len().min(12)]),
        if e.source.git_dirty == Some(true) {
            " (dirty)"
        } else {
            ""
        },
        e.provenance.note,
    );
    if !e.provenance_warnings.is_empty() {
        let _ = writeln!(
            o,
            "**Provenance warnings** (binaries vs checkout): {}.\n",
            e.provenance_warnings.join("; ")
        );
    }
}

fn how_to_read(o: &mut String, res: &ResultsFile) {
    let saturated = res.cells.iter().any(|c| c.generator_saturated);
    let _ = writeln!(o, "## How to read this\n");
    let _ = writeln!(
        o,
        "- Server and generator share one machine; closed-loop req/s measures loopback and the generator as well as the runtime{}. The comparisons valid on any machine come first: **server CPU µs per request** and **latency at the same offered rate** (open loop).",
        if saturated {
            " — and in cells marked † the generator saturated, so req/s is a lower bound"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "- Closed-loop cells: mean req/s over repetitions, ± half-width of its 95 % Student-t CI, p99 latency (median over repetitions), mean server CPU µs/request (the same figures as the README headline, the page and the terminal summary)."
    );
    if res.cells.iter().any(|c| c.service == CEILING) {
        let _ = writeln!(
            o,
            "- (N× epoll): mean server CPU per request as a multiple of `{CEILING}`'s mean at the same load — the service with no runtime (one edge-triggered epoll loop per core), this machine's per-core ceiling."
        );
    }
    if res.cells.iter().any(|c| c.counted.is_some()) {
        let _ = writeln!(
            o,
            "- Counted cost (syscalls, context switches, faults, instructions per request) is exact where times are noisy: a ranking on counts holds on a busy machine, and instruction counts of one binary hold across machines of one architecture. They are not time: a syscall or an instruction costs different ns on different services and machines. See \"Counted cost per request\" and docs/counted-cost.md."
        );
    }
    generator_io(o, res);
    let _ = writeln!(
        o,
        "- † generator saturated · ⚠ suspect (reasons at the end) · ✗ failed · n/a profile unsupported here, or a protocol the service does not serve (its row says which).\n"
    );
}

/// loadgen's I/O backend: one line when every cell that recorded it agrees, else each
/// backend with its cells (a run that fell back to epoll partway measured with two programs).
fn generator_io(o: &mut String, res: &ResultsFile) {
    let mut by_io: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &res.cells {
        if let Some(io) = &c.generator_io {
            by_io.entry(io).or_default().push(&c.key);
        }
    }
    match by_io.len() {
        0 => {}
        1 => {
            let io = by_io.keys().next().expect("one");
            let _ = writeln!(o, "- Load generator I/O: {io} in every cell.");
        }
        _ => {
            let parts: Vec<String> = by_io
                .iter()
                .map(|(io, keys)| format!("{io} in {}", keys.join(", ")))
                .collect();
            let _ = writeln!(
                o,
                "- **Load generator I/O differs between cells**: {} (compare refuses to pair cells measured on different I/O).",
                parts.join("; ")
            );
        }
    }
}

/// Open-loop tables first (valid on any machine), then closed loop.
fn load_tables(o: &mut String, run: &RunRecord, res: &ResultsFile) {
    // Churn cells have their own table (`export::churn`).
    let cells: Vec<CellSummary> = res
        .cells
        .iter()
        .filter(|c| c.churn.is_none())
        .cloned()
        .collect();
    let groups = group::groups(&cells);
    if groups.iter().any(|g| g.open) {
        let _ = writeln!(
            o,
            "## Equal offered load (open loop): server CPU per request and latency\n"
        );
        for g in groups.iter().filter(|g| g.open) {
            table(o, g, run, open_cell);
        }
    }
    if groups.iter().any(|g| !g.open) {
        let _ = writeln!(o, "## Closed loop: throughput, p99 and CPU per request\n");
        for g in groups.iter().filter(|g| !g.open) {
            table(o, g, run, closed_cell);
        }
    }
}

/// One row per (service, profile): start-up over every start, idle and peak RSS.
fn startup_and_memory(o: &mut String, res: &ResultsFile, runtimes: &BTreeMap<String, String>) {
    // A `matrix calibrate` run has only its arms.
    if res.cells.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Start-up and memory\n");
    let _ = writeln!(
        o,
        "| service | profile | exec → first 200 (median, min–max, n) | idle RSS | peak RSS under load | runtime / driver / model | deviations |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    let mut seen = BTreeSet::new();
    for c in &res.cells {
        if !seen.insert((c.service.clone(), c.profile.clone())) {
            continue;
        }
        let same: Vec<&CellSummary> = res
            .cells
            .iter()
            .filter(|x| x.service == c.service && x.profile == c.profile)
            .collect();
        let starts: Vec<f64> = same
            .iter()
            .filter_map(|x| x.startup_us.as_ref())
            .flat_map(|s| [s.median])
            .collect();
        let su = same.iter().filter_map(|x| x.startup_us.as_ref());
        let n: u32 = su.clone().map(|s| s.n).sum();
        let min = su.clone().map(|s| s.min).fold(f64::INFINITY, f64::min);
        let max = su.map(|s| s.max).fold(0.0, f64::max);
        let med = crate::results::stats::median(&starts);
        let idle = crate::results::stats::median(
            &same
                .iter()
                .filter_map(|x| x.idle_rss_bytes.as_ref().map(|s| s.median))
                .collect::<Vec<_>>(),
        );
        let peak = same.iter().filter_map(|x| x.rss_peak_bytes).max();
        let rt = runtimes.get(&c.service).map_or("–", String::as_str);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.service,
            c.profile,
            med.map_or("–".into(), |m| format!(
                "{} ({}–{}, n={n})",
                micros_cell(m),
                micros_cell(min),
                micros_cell(max)
            )),
            idle.map_or("–".into(), mib_cell),
            peak.map_or("–".into(), |p| mib_cell(p as f64)),
            rt,
            if c.deviations.is_empty() {
                "–".into()
            } else {
                c.deviations.join(", ")
            },
        );
    }
    let _ = writeln!(o);
}

/// The runner's own floor under the services' start-up figures, when it was measured.
fn startup_floor(o: &mut String, run: &RunRecord) {
    let Some(f) = run.floors.as_ref().map(|f| &f.startup) else {
        return;
    };
    match (&f.first_200_us, &f.unavailable) {
        (Some(s), _) => {
            let _ = writeln!(
                o,
                "Start-up floor of this runner on this machine: `{}` (binds, answers one /ping, exits) started {} times the services' way: exec → first 200 median {} ({}–{}). No service can start faster than this here; the figures above include it. Exec is the child's own clock just before `execve`; fork and confinement ({}) are outside it.\n",
                f.binary,
                s.n,
                micros_cell(s.median),
                micros_cell(s.min),
                micros_cell(s.max),
                f.launch_us
                    .as_ref()
                    .map_or("not measured".into(), |l| format!(
                        "median {}",
                        micros_cell(l.median)
                    )),
            );
        }
        (None, Some(why)) => {
            let _ = writeln!(o, "Start-up floor not measured: {why}.\n");
        }
        (None, None) => {}
    }
}

/// The machine's timer and loopback floor, and how open-loop cells were judged against it.
fn machine_floor(o: &mut String, run: &RunRecord) {
    let Some(m) = run.floors.as_ref().and_then(|f| f.machine.as_ref()) else {
        return;
    };
    let Some(f) = &m.report else {
        if let Some(why) = &m.unavailable {
            let _ = writeln!(o, "Machine floor not measured: {why}.\n");
        }
        return;
    };
    let timers: Vec<String> = f
        .timer
        .iter()
        .filter_map(|t| {
            let l = t.lateness.as_ref()?;
            let cost = t.cpu_per_wakeup_us.map_or(String::new(), |c| {
                format!(" ({c:.1} µs of CPU per wake-up)")
            });
            Some(format!(
                "{:.0}/s p50 {:.0} µs, p99 {:.0} µs{cost}",
                t.rate_per_s, l.p50_us, l.p99_us
            ))
        })
        .collect();
    let echo = f
        .loopback_echo
        .round_trip
        .as_ref()
        .map_or("not measured".into(), |r| {
            format!("p50 {:.0} µs, p99 {:.0} µs", r.p50_us, r.p99_us)
        });
    let _ = writeln!(
        o,
        "Machine floor (`loadgen --floor` on the generator's CPU {}): a sleeping thread wakes late by {}; loopback TCP echo round trip {echo}. loadgen splits each send's lag into how late its thread was woken (the machine: timer, other tasks on that CPU, the hypervisor) and the rest, its own. An open-loop repetition flagged for send lag whose own part stays within loadgen's send-lag limit is marked \"at the machine's floor\" (the machine's, not the generator's) instead of † generator saturated; above it, † stands. (Reports without the split: within {}× the timer lateness above + {:.0} µs.)\n",
        f.cpu.map_or("?".into(), |c| c.to_string()),
        if timers.is_empty() {
            "(not measured)".into()
        } else {
            timers.join("; ")
        },
        crate::results::schema::AT_FLOOR_FACTOR,
        crate::results::schema::AT_FLOOR_SLACK_US,
    );
    if let Some(idle) = &run.environment.hardware.cpu_idle {
        let name = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        let poll = idle
            .guest_halt_poll_ns
            .map_or(String::new(), |ns| format!(", guest halt polling {ns} ns"));
        let _ = writeln!(
            o,
            "Idle CPUs wait with cpuidle driver {}, governor {}{poll}. How deeply an idle CPU sleeps sets much of the wake-up lateness and cost above, and of every latency here (a halted vCPU is woken through the hypervisor).\n",
            name(&idle.driver),
            name(&idle.governor),
        );
    }
}

fn drift(o: &mut String, res: &ResultsFile) {
    if let Some(d) = res.drift.as_ref().filter(|d| !d.series.is_empty()) {
        let _ = writeln!(o, "## Drift\n");
        let _ = writeln!(
            o,
            "Reference cell `{}` re-run {} time(s) through the run (one repetition each, after the matrix group given), against its repetition 1. A comparison of two services in this run is paired on rounds, so drift shared by both cancels; between two runs (`matrix compare`) it does not, and compare warns when a run's drift exceeds the MDE.\n",
            d.key,
            d.series.len()
        );
        let first = d.first_requests_per_s.map_or("–".into(), rate_cell);
        let first_cpu = d
            .first_cpu_us_per_request
            .map_or("–".into(), |c| format!("{c:.1} µs"));
        let point = |v: Option<f64>, base: Option<f64>, f: &dyn Fn(f64) -> String| match (v, base) {
            (Some(v), Some(b)) if b != 0.0 => format!("{} ({:+.1} %)", f(v), (v - b) / b * 100.0),
            (Some(v), _) => f(v),
            _ => "✗".into(),
        };
        let rps: Vec<String> = d
            .series
            .iter()
            .map(|p| point(p.requests_per_s, d.first_requests_per_s, &|v| rate_cell(v)))
            .collect();
        let cpu: Vec<String> = d
            .series
            .iter()
            .map(|p| {
                point(p.cpu_us_per_request, d.first_cpu_us_per_request, &|v| {
                    format!("{v:.1} µs")
                })
            })
            .collect();
        let after: Vec<String> = d
            .series
            .iter()
            .map(|p| p.after_groups.to_string())
            .collect();
        let _ = writeln!(
            o,
            "| | repetition 1 | {} |",
            after
                .iter()
                .map(|a| format!("after group {a}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(o, "|---|---|{}", "---|".repeat(after.len()));
        let _ = writeln!(o, "| req/s | {first} | {} |", rps.join(" | "));
        let _ = writeln!(o, "| CPU/request | {first_cpu} | {} |\n", cpu.join(" | "));
        let _ = writeln!(
            o,
            "Largest drift: req/s {} · CPU/request {}. {}\n",
            d.max_requests_per_s_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.max_cpu_us_per_request_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.note
        );
    } else if let Some(d) = &res.drift {
        let _ = writeln!(o, "## Drift\n");
        let _ = writeln!(
            o,
            "Reference cell `{}` re-run at the end: req/s {} · CPU/request {}. {}\n",
            d.key,
            d.requests_per_s_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.cpu_us_per_request_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.note
        );
    }
}

fn suspects(o: &mut String, res: &ResultsFile) {
    let suspects: Vec<&CellSummary> = res
        .cells
        .iter()
        .filter(|c| c.suspect || c.failure.is_some())
        .collect();
    if !suspects.is_empty() {
        let _ = writeln!(o, "## Suspect, failed and unsupported cells\n");
        for c in suspects {
            let mut why = c.suspect_reasons.clone();
            if let Some(f) = &c.failure {
                why.insert(0, f.clone());
            }
            let _ = writeln!(o, "- `{}`: {}", c.key, why.join("; "));
        }
        let _ = writeln!(o);
    }
}
