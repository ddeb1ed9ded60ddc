//! results.md's "Counted cost per request": for every cell that was counted, each service's
//! syscalls, context switches (wake-ups), page faults, user and system CPU µs per response,
//! its user-space instructions per request where Valgrind counted them, and the generator's
//! syscalls per response beside it. Written only when the run counted (runs recorded before
//! counted cost render as they did).

use std::fmt::Write as _;

use crate::results::schema::{CellSummary, ResultsFile, Stat};
use crate::results::schema::{CountedSummary, PerRequestSummary};
use crate::results::units::count;

/// What counting costs the server, measured as docs/counted-cost.md describes.
pub const COUNTING_COST: &str = "perf's `raw_syscalls:sys_enter` tracepoint attached to ping-epoll raised its CPU per request by 9 % at 10,000/s (scripts/experiments/counting-cost.sh, 5 interleaved pairs, shared 2-core VM), more than 2 %, so syscalls are counted in their own window and never in the timed one; the /proc reads every 50 ms run on the runner's CPU";

fn median_cv(s: &Option<Stat>) -> String {
    match s {
        Some(s) => match s.cv {
            Some(cv) if s.n > 1 => format!("{} ±{:.1} %", count(s.median), cv * 100.0),
            _ => count(s.median),
        },
        None => "–".into(),
    }
}

fn micros(s: &Option<Stat>) -> String {
    s.as_ref()
        .map_or("–".into(), |s| format!("{:.2}", s.median))
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

fn row(c: &CellSummary, k: &CountedSummary) -> String {
    let s = &k.server;
    format!(
        "| {} | {} | {} ({}) | {} | {} | {} | {} | {} |",
        c.service,
        syscalls(s),
        median_cv(&s.ctx_switches),
        s.wakeups.as_ref().map_or("–".into(), |w| count(w.median)),
        s.faults.as_ref().map_or("–".into(), |f| count(f.median)),
        micros(&s.user_us),
        micros(&s.system_us),
        instructions(k),
        syscalls(&k.loadgen),
    )
}

pub fn section(o: &mut String, res: &ResultsFile) {
    let cells: Vec<&CellSummary> = res.cells.iter().filter(|c| c.counted.is_some()).collect();
    let Some(first) = cells.first().and_then(|c| c.counted.as_ref()) else {
        return;
    };
    let _ = writeln!(o, "## Counted cost per request\n");
    let _ = writeln!(
        o,
        "What the kernel counted for the service's whole process (every thread), divided by the responses: context switches, faults and user/system µs over each repetition's measured window; syscalls in a short syscall window of the same load right after it (perf's tracepoint slows every syscall, so it stays out of the timed window); median over repetitions, ± the per-repetition CV. Counts do not depend on how busy the machine is the way times do, so they rank services where the timing columns above cannot. Context switches in brackets: the voluntary ones (the thread slept and was woken — wake-ups). Instructions: user space only (the kernel's are not counted), the slope between {} and {} sequential requests on one connection under Valgrind, c1 cells of `--count-instructions` runs; io_uring services are unmeasured there. Counted with {}. Counting's cost: {}. Per-syscall breakdown (top three by name): not recorded by this runner yet. What each count means: docs/counted-cost.md.\n",
        crate::count::valgrind::REQUESTS.0,
        crate::count::valgrind::REQUESTS.1,
        first.tool,
        COUNTING_COST,
    );
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for c in &cells {
        let k = (c.scenario.as_str(), c.level.as_str(), c.profile.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (scenario, level, profile) in keys {
        let _ = writeln!(o, "### {scenario} {level} · profile {profile}\n");
        let _ = writeln!(
            o,
            "| service | syscalls | context switches (wake-ups) | faults | user µs | system µs | instructions | generator syscalls |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
        for c in cells.iter().filter(|c| {
            (c.scenario.as_str(), c.level.as_str(), c.profile.as_str())
                == (scenario, level, profile)
        }) {
            if let Some(k) = &c.counted {
                let _ = writeln!(o, "{}", row(c, k));
            }
        }
        let _ = writeln!(o);
    }
}
