//! results.md's "Counted cost per request": for every cell that was counted, each service's
//! syscalls, context switches (wake-ups), page faults, user and system CPU µs per response,
//! its user-space instructions per request where Valgrind counted them, and the generator's
//! syscalls per response beside it; from the exact count on, the server's top three syscalls
//! by name too, and where kernel events were counted a column per `metric::kernel_events()`
//! row (packets, socket sends, io_uring submissions per request). Written only when the run counted (runs recorded before counted cost, or
//! before the exact count, render as they did).

use std::fmt::Write as _;

use crate::results::schema::{CellSummary, ResultsFile, RunRecord, Stat};
use crate::results::schema::{CountedSummary, PerRequestSummary};
use crate::results::units::count;

/// What counting costs the server, measured as docs/counted-cost.md describes.
pub const COUNTING_COST: &str = "perf's `raw_syscalls:sys_enter` tracepoint attached to ping-epoll raised its CPU per request by 9 % at 10,000/s (scripts/experiments/counting-cost.sh, 5 interleaved pairs, shared 2-core VM), more than 2 %, so syscalls are counted in their own window and never in the timed one; the /proc reads every 50 ms run on the runner's CPU";

fn median_cv(s: &Option<Stat>) -> String {
    match s {
        Some(s) => crate::results::counted::count_text(s),
        None => "–".into(),
    }
}

/// A median of user or system µs per request, to the step one clock tick makes per request
/// over the window (`step_us`): /proc counts whole ticks (10 ms), so over 10,000 responses a
/// tick is 1 µs a request and a second decimal would be noise. Two decimals where the step is
/// unknown.
fn micros(s: &Option<Stat>, step_us: Option<f64>) -> String {
    let decimals = match step_us {
        Some(step) if step >= 1.0 => 0,
        Some(step) if step >= 0.1 => 1,
        _ => 2,
    };
    s.as_ref()
        .map_or("–".into(), |s| format!("{:.*}", decimals, s.median))
}

/// One clock tick per request over a repetition's measured window of cell `c`: the tick over
/// the responses the window held (its rate × its length, from the run's plan).
fn tick_step_us(c: &CellSummary, run: &RunRecord) -> Option<f64> {
    let spec = run.plan.iter().find(|p| p.key == c.key)?;
    let rate = c
        .offered_rate_per_s
        .or_else(|| c.requests_per_s.as_ref().map(|r| r.median))?;
    let responses = rate * spec.duration_ms as f64 / 1000.0;
    // SAFETY: sysconf reads a constant of the running system.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (responses >= 1.0 && ticks_per_s > 0).then(|| 1e6 / ticks_per_s as f64 / responses)
}

fn syscalls(p: &PerRequestSummary) -> String {
    match (&p.syscalls, &p.syscalls_unmeasured) {
        (Some(_), _) => median_cv(&p.syscalls),
        (None, Some(why)) => format!("unmeasured: {why}"),
        (None, None) => "–".into(),
    }
}

fn instructions(c: &CountedSummary) -> String {
    match (&c.instructions, &c.instructions_unmeasured) {
        (Some(_), _) => median_cv(&c.instructions),
        (None, Some(why)) => format!("unmeasured: {why}"),
        (None, None) => "–".into(),
    }
}

/// `read 1.00 · write 1.00 · epoll_wait 0.99`, or why the names are missing.
fn top_syscalls(p: &PerRequestSummary) -> String {
    if p.top_syscalls.is_empty() {
        return match (&p.top_syscalls_unmeasured, &p.syscalls_unmeasured) {
            (Some(why), _) | (None, Some(why)) => format!("unmeasured: {why}"),
            (None, None) => "–".into(),
        };
    }
    p.top_syscalls
        .iter()
        .map(|(n, s)| format!("{n} {:.2}", s.median))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// perf's hardware counters per request of a row, as three cells, each a median ± CV or why
/// it is missing.
fn hardware(p: &PerRequestSummary) -> String {
    let Some(h) = &p.hardware else {
        return " – | – | – |".into();
    };
    [&h.instructions_user, &h.instructions_kernel, &h.cycles]
        .iter()
        .map(|s| match (s, &h.unmeasured) {
            (Some(_), _) => format!(" {} |", median_cv(s)),
            (None, Some(why)) => format!(" unmeasured: {why} |"),
            (None, None) => " – |".into(),
        })
        .collect()
}

/// Whether any cell's hardware counters were counted (then results.md has their columns).
fn hardware_measured(cells: &[&CellSummary]) -> bool {
    cells.iter().any(|c| {
        c.counted
            .as_ref()
            .and_then(|k| k.server.hardware.as_ref())
            .is_some_and(|h| {
                h.instructions_user.is_some()
                    || h.instructions_kernel.is_some()
                    || h.cycles.is_some()
            })
    })
}

/// Why no cell's hardware counters were counted (the first cell's reason), where a cell
/// tried.
fn hardware_unmeasured<'a>(cells: &[&'a CellSummary]) -> Option<&'a str> {
    cells.iter().find_map(|c| {
        c.counted
            .as_ref()?
            .server
            .hardware
            .as_ref()?
            .unmeasured
            .as_deref()
    })
}

/// Whether any cell counted (or tried to count) kernel events (then results.md has a column
/// for each of `metric::kernel_events()`).
fn kernel_measured(cells: &[&CellSummary]) -> bool {
    cells.iter().any(|c| {
        c.counted
            .as_ref()
            .is_some_and(|k| !k.server.kernel.is_empty() || !k.server.kernel_unmeasured.is_empty())
    })
}

/// A row's kernel-event cells, one per `metric::kernel_events()` row: a median ± CV, or why it is
/// missing.
fn kernel(p: &PerRequestSummary) -> String {
    crate::results::metric::kernel_events()
        .map(
            |(_, tp)| match (p.kernel.get(tp), p.kernel_unmeasured.get(tp)) {
                (Some(s), _) => format!(" {} |", median_cv(&Some(s.clone()))),
                (None, Some(why)) => format!(" unmeasured: {why} |"),
                (None, None) => " – |".into(),
            },
        )
        .collect()
}

fn row(
    c: &CellSummary,
    k: &CountedSummary,
    named: bool,
    hw: bool,
    kern: bool,
    step_us: Option<f64>,
) -> String {
    let s = &k.server;
    let top = if named {
        format!(" {} |", top_syscalls(s))
    } else {
        String::new()
    };
    let hw = if hw { hardware(s) } else { String::new() };
    let kern = if kern { kernel(s) } else { String::new() };
    format!(
        "| {} | {} |{top} {} ({}) | {} | {} | {} | {} |{hw}{kern} {} |",
        c.service,
        syscalls(s),
        median_cv(&s.ctx_switches),
        s.wakeups.as_ref().map_or("–".into(), |w| count(w.median)),
        s.faults.as_ref().map_or("–".into(), |f| count(f.median)),
        micros(&s.user_us, step_us),
        micros(&s.system_us, step_us),
        instructions(k),
        syscalls(&k.loadgen),
    )
}

/// The positions (scenario, level, profile) of `cells`, in first-seen order: one table each.
pub fn positions<'a>(cells: &[&'a CellSummary]) -> Vec<(&'a str, &'a str, &'a str)> {
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for c in cells {
        let k = (c.scenario.as_str(), c.level.as_str(), c.profile.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

pub fn section(
    o: &mut String,
    run: &RunRecord,
    res: &ResultsFile,
    instruction_requests: Option<(u64, u64)>,
) {
    let cells: Vec<&CellSummary> = res.cells.iter().filter(|c| c.counted.is_some()).collect();
    let Some(first) = cells.first().and_then(|c| c.counted.as_ref()) else {
        return;
    };
    let _ = writeln!(o, "## Counted cost per request\n");
    let exact = cells
        .iter()
        .find_map(|c| c.counted.as_ref().and_then(|k| k.syscall_requests));
    // How the syscalls were counted: the older window (runs before the exact count), or two
    // loads between idle gaps.
    let syscalls = match exact {
        None => "syscalls in a short syscall window of the same load right after it (perf's tracepoint slows every syscall, so it stays out of the timed window); median over repetitions, ± the per-repetition CV".to_owned(),
        Some((n1, n2)) => format!("median over repetitions, ± the per-repetition CV. Syscalls are counted exactly, in a window of their own after the timed one (perf's tracepoint slows every syscall, so it stays out of the timed window): with the server idle before and after, the generator makes two loads of N and 3N requests at the cell's own shape (N from the measured req/s, about 1 s for both; {n1} and {n2} in the first cell), perf's totals are read in the idle gaps around each, and per request is the difference of the two counts over the difference of their responses, so connecting, accepting and closing the cell's connections, the generator's start-up and perf's attach cancel. The generator's syscalls are counted the same way (`perf stat -- loadgen`, its whole life). Top syscalls: the three the server made most per request, by name (`perf record` of the same tracepoint over the same two loads, checked to sum to perf stat's count)"),
    };
    // The request counts of the first count recorded (each count records its own).
    let instructions = instruction_requests.map_or_else(
        || "not counted in this run (`--count-instructions` counts them under Valgrind, at c1)".to_string(),
        |(n1, n2)| format!("user space only (the kernel's are not counted), the slope between {n1} and {n2} sequential requests on one connection under Valgrind, c1 cells of `--count-instructions` runs (io_uring services on io_uring)"),
    );
    let by_name = if exact.is_none() {
        " Per-syscall breakdown (top three by name): not recorded by this runner yet."
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "What the kernel counted for the service's whole process (every thread), divided by the responses: context switches, faults and user/system µs over each repetition's measured window (µs from /proc's clock ticks, so shown to the step one tick makes per request over the window); {syscalls}. Counts do not depend on how busy the machine is the way times do, so they rank services where the timing columns above cannot. Context switches in brackets: the voluntary ones (the thread slept and was woken — wake-ups). Instructions: {instructions}. Counted with {}. Counting's cost: {}.{by_name} What each count means: docs/counted-cost.md.\n",
        first.tool, COUNTING_COST,
    );
    // Hardware counters: columns where any cell counted them; one line where every cell
    // tried and could not (a VM without a PMU); nothing in runs before them.
    let hw = hardware_measured(&cells);
    if hw {
        let _ = writeln!(
            o,
            "Hardware counters: `perf stat -e {}` on the service over the same two loads as its syscalls (the difference over the difference of responses), by its own perf: instructions in user space (`:u`) and in the kernel (`:k`), and cycles, per request — kernel work included, unlike Valgrind's user-space count beside them.\n",
            crate::results::schema::HW_EVENTS.join(","),
        );
    } else if let Some(why) = hardware_unmeasured(&cells) {
        let _ = writeln!(
            o,
            "Hardware counters (`perf stat -e {}`, per request over the same two loads as the syscalls): unmeasured: {why}.\n",
            crate::results::schema::HW_EVENTS.join(","),
        );
    }
    let kern = kernel_measured(&cells);
    if kern {
        let _ = writeln!(
            o,
            "Kernel events: `perf stat -e <tracepoint>` on the service over the same two loads as its syscalls (the difference over the difference of responses), by its own perf — work the syscall count cannot see, such as an io_uring service's submissions, which enter the kernel without a syscall of their own: {}. With `-p`, work done in a softirq is charged to the task it interrupted; on loopback the receiving socket's processing runs in the sender's softirq, so a packet counts on the side that sent it. Every tracepoint counted (wake-ups, softirqs, completions too) is in results.json. What each means and how exact it is: docs/counted-cost.md.\n",
            crate::results::metric::kernel_events()
                .map(|(m, tp)| format!("{} (`{tp}`)", m.label()))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let not_exact = cells.iter().filter_map(|c| c.counted.as_ref()).any(|k| {
        [
            &k.server.syscalls,
            &k.server.ctx_switches,
            &k.instructions,
            &k.loadgen.syscalls,
        ]
        .into_iter()
        .flatten()
        .any(crate::results::counted::not_exact)
    });
    if not_exact {
        let _ = writeln!(o, "{}\n", crate::results::counted::NOT_EXACT);
    }
    for (scenario, level, profile) in super::counted::positions(&cells) {
        let _ = writeln!(o, "### {scenario} {level} · profile {profile}\n");
        let (head, rule) = if exact.is_some() {
            (" top syscalls per request |", "---|")
        } else {
            ("", "")
        };
        let (hw_head, hw_rule) = if hw {
            (
                " instructions:u (perf) | instructions:k (perf) | cycles (perf) |",
                "---|---|---|",
            )
        } else {
            ("", "")
        };
        let (k_head, k_rule): (String, String) = if kern {
            crate::results::metric::kernel_events()
                .map(|(m, _)| (format!(" {} |", m.label()), "---|".to_owned()))
                .unzip()
        } else {
            Default::default()
        };
        let _ = writeln!(
            o,
            "| service | syscalls |{head} context switches (wake-ups) | faults | user µs | system µs | instructions |{hw_head}{k_head} generator syscalls |"
        );
        let _ = writeln!(
            o,
            "|---|---|{rule}---|---|---|---|---|{hw_rule}{k_rule}---|"
        );
        for c in cells.iter().filter(|c| {
            (c.scenario.as_str(), c.level.as_str(), c.profile.as_str())
                == (scenario, level, profile)
        }) {
            if let Some(k) = &c.counted {
                let step = tick_step_us(c, run);
                let _ = writeln!(o, "{}", row(c, k, exact.is_some(), hw, kern, step));
            }
        }
        let _ = writeln!(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_syscalls_read_as_names_with_per_request_counts_or_why_not() {
        let stat = |v: f64| Stat {
            n: 3,
            median: v,
            ..Default::default()
        };
        let p = PerRequestSummary {
            top_syscalls: vec![
                ("epoll_wait".into(), stat(1.0)),
                ("read".into(), stat(1.0)),
                ("write".into(), stat(0.996)),
            ],
            ..Default::default()
        };
        assert_eq!(top_syscalls(&p), "epoll_wait 1.00 · read 1.00 · write 1.00");
        let p = PerRequestSummary {
            top_syscalls_unmeasured: Some("no syscall name table for aarch64".into()),
            ..Default::default()
        };
        assert_eq!(
            top_syscalls(&p),
            "unmeasured: no syscall name table for aarch64"
        );
        assert_eq!(top_syscalls(&PerRequestSummary::default()), "–");
    }

    #[test]
    fn kernel_cells_are_one_per_metric_counted_or_why_not() {
        let mut p = PerRequestSummary::default();
        p.kernel.insert(
            "net:net_dev_xmit".into(),
            Stat {
                n: 3,
                median: 1.05,
                cv: Some(0.0),
                ..Default::default()
            },
        );
        p.kernel_unmeasured.insert(
            "io_uring:io_uring_submit_req".into(),
            "perf stat -e io_uring:io_uring_submit_req: unknown tracepoint".into(),
        );
        assert_eq!(
            kernel(&p),
            " 1.050 ±0.0 % | – | unmeasured: perf stat -e io_uring:io_uring_submit_req: unknown tracepoint | – |"
        );
    }

    #[test]
    fn cpu_micros_are_shown_to_the_step_one_tick_makes() {
        let s = Some(Stat {
            n: 3,
            median: 9.3175,
            ..Default::default()
        });
        assert_eq!(micros(&s, Some(0.67)), "9.3", "a tick is 0.67 µs a request");
        assert_eq!(micros(&s, Some(2.0)), "9");
        assert_eq!(micros(&s, Some(0.05)), "9.32");
        assert_eq!(micros(&s, None), "9.32", "step unknown: as before");
        assert_eq!(micros(&None, Some(1.0)), "–");
    }
}
