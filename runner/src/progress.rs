//! Progress on stderr: an indicatif bar on a terminal, plain lines otherwise, nothing with
//! --quiet. Format: `[12/96] ping-monoio /json c=64 rep 2/3  412k req/s p99 1.9 ms  ETA 4:10`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::results::schema::{CellSpec, RepResult};
use crate::results::units::min_sec;

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    total: u64,
    done: u64,
    started: Instant,
    estimate_s: f64,
}

fn level_text(c: &CellSpec) -> String {
    match &c.load {
        loadgen::LoadModel::Closed {
            connections,
            pipeline,
        } if *pipeline > 1 => {
            format!("c={connections} pipeline={pipeline}")
        }
        loadgen::LoadModel::Closed { connections, .. } => format!("c={connections}"),
        loadgen::LoadModel::Open { rate_per_s, .. } => format!("rate={rate_per_s:.0}/s"),
    }
}

/// The counts as measured, first: what a counted gate decides on ("instr 2,188/req syscalls
/// 3.033/req; "), or nothing where the repetition counted nothing.
fn counted_text(r: &RepResult) -> String {
    let mut parts = Vec::new();
    if let Some(i) = r.instructions.as_ref().and_then(|i| i.per_request) {
        parts.push(format!("instr {}/req", thousands(i)));
    }
    if let Some(s) = r
        .counts
        .as_ref()
        .and_then(|c| c.server.syscalls_per_request())
    {
        parts.push(format!("syscalls {s:.3}/req"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{}; ", parts.join(" "))
    }
}

/// 2188.4 → "2,188".
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

impl Progress {
    pub fn new(total: u64, estimate_s: f64, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{bar:24} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        });
        Progress {
            bar,
            plain: !quiet && !tty,
            total,
            done: 0,
            started: Instant::now(),
            estimate_s,
        }
    }

    fn eta(&self) -> Duration {
        let remaining = self.total.saturating_sub(self.done) as f64;
        let per = if self.done > 0 {
            self.started.elapsed().as_secs_f64() / self.done as f64
        } else {
            self.estimate_s / self.total.max(1) as f64
        };
        Duration::from_secs_f64(remaining * per)
    }

    fn head(&self, c: &CellSpec, rep: u32) -> String {
        let rep = match c.adaptive {
            _ if rep == 0 => "drift re-run".to_string(),
            // Adaptive: the count is not known in advance, only its cap.
            Some(a) => format!(
                "rep {rep} of ≤{} (CI target {} %)",
                c.max_repetitions(),
                a.target_ci_pct
            ),
            None => format!("rep {rep}/{}", c.repetitions),
        };
        // Which arm: a calibration arm runs the same build as the baseline's cell, and the
        // progress line must not read as that cell twice.
        let arm = match c.arm.as_deref() {
            Some("b") => " (calibration: the same build again, arm B)",
            Some(_) => " (calibration arm A)",
            None => "",
        };
        format!(
            "[{}/{}] {}{arm} {} {} [{}] {rep}",
            (self.done + 1).min(self.total),
            self.total,
            c.service,
            c.path,
            level_text(c),
            c.profile
        )
    }

    pub fn begin(&self, c: &CellSpec, rep: u32) {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{}  ETA {}",
                self.head(c, rep),
                min_sec(self.eta().as_secs() as f64)
            ));
        }
    }

    pub fn end(&mut self, c: &CellSpec, rep: u32, r: Option<&RepResult>, failure: Option<&str>) {
        let what = match (r, failure) {
            (Some(r), _) => format!(
                "{}{:.0} req/s p99 {:.2} ms{}",
                counted_text(r),
                r.report.requests_per_s,
                r.report.latency_us.p99 as f64 / 1000.0,
                r.server
                    .cpu_us_per_request
                    .map_or(String::new(), |c| format!(" cpu {c:.1} µs/req"))
            ),
            (None, Some(f)) => format!("FAILED: {f}"),
            (None, None) => "skipped".into(),
        };
        self.end_with(c, rep, &what);
    }

    /// Ends a repetition with its own one-line outcome (e.g. a churn cell's RSS).
    pub fn end_with(&mut self, c: &CellSpec, rep: u32, what: &str) {
        let line = format!("{}  {what}", self.head(c, rep));
        self.done += 1;
        let eta = min_sec(self.eta().as_secs() as f64);
        if let Some(b) = &self.bar {
            b.println(format!("{line}  ETA {eta}"));
            b.set_position(self.done);
        } else if self.plain {
            eprintln!("{line}  ETA {eta}");
        }
    }

    /// Takes repetitions that will not run (a cell failed, stopped early or was finished
    /// before a resume) out of the total, so `[n/N]` counts up one repetition at a time.
    pub fn skip(&mut self, n: u64) {
        self.total = self.total.saturating_sub(n).max(self.done);
        if let Some(b) = &self.bar {
            b.set_length(self.total);
        }
    }

    pub fn note(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.println(msg);
        } else if self.plain {
            eprintln!("{msg}");
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::Adaptive;

    fn cell(adaptive: Option<Adaptive>) -> CellSpec {
        let mut c = crate::results::suspect::tests::spec(loadgen::LoadModel::Closed {
            connections: 4,
            pipeline: 1,
        });
        c.repetitions = 2;
        c.adaptive = adaptive;
        c
    }

    #[test]
    fn an_adaptive_repetition_shows_its_cap_and_target_not_the_configured_count() {
        let p = Progress::new(10, 1.0, true);
        let a = Adaptive {
            target_ci_pct: 5.0,
            max_repetitions: 10,
        };
        let h = p.head(&cell(Some(a)), 8);
        assert!(h.ends_with("rep 8 of ≤10 (CI target 5 %)"), "{h}");
        assert!(p.head(&cell(None), 2).ends_with("rep 2/2"));
    }

    /// F5: the counts that decide a gate are on the line, and a calibration arm says so.
    #[test]
    fn a_counted_repetition_shows_its_counts_and_a_calibration_arm_is_named() {
        assert_eq!(thousands(2188.4), "2,188");
        assert_eq!(thousands(11080.0), "11,080");
        assert_eq!(thousands(999.0), "999");
        let p = Progress::new(10, 1.0, true);
        let mut c = cell(None);
        c.service = "ping-epoll@base".into();
        assert!(p.head(&c, 1).contains("ping-epoll@base /ping"));
        c.arm = Some("b".into());
        let h = p.head(&c, 1);
        assert!(
            h.contains("ping-epoll@base (calibration: the same build again, arm B) /ping"),
            "{h}"
        );
        let mut r = crate::results::suspect::tests::rep(&c, 1, 8000.0, 120.0);
        assert_eq!(counted_text(&r), "");
        r.instructions = Some(crate::results::schema::InstructionCount {
            per_request: Some(2188.4),
            ..Default::default()
        });
        assert_eq!(counted_text(&r), "instr 2,188/req; ");
    }

    #[test]
    fn a_cell_that_stops_early_shrinks_the_total_instead_of_jumping_the_count() {
        let mut p = Progress::new(30, 1.0, true);
        let c = cell(None);
        for rep in 1..=3 {
            p.end_with(&c, rep, "");
        }
        p.skip(7); // stopped after 3 of 10
        assert!(p.head(&c, 1).starts_with("[4/23] "), "{}", p.head(&c, 1));
        p.skip(100);
        assert!(p.head(&c, 1).starts_with("[3/3] "), "{}", p.head(&c, 1));
    }
}
