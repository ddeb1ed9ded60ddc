//! When a number may not mean what it says: each reason is a sentence a reader can check.

use loadgen::LoadModel;

use crate::results::schema::{CellResult, CellStatus};
use crate::stats;

/// Run-to-run spread above which throughput is called noisy.
pub const MAX_CV: f64 = 0.05;
/// Allowed relative gap between throughput × mean latency and the concurrency (Little's law).
pub const LITTLE_TOLERANCE: f64 = 0.10;
/// Open loop: achieved / offered below this = the schedule was not kept.
pub const MIN_OPEN_RATIO: f64 = 0.95;

pub fn suspect_reasons(cell: &CellResult) -> Vec<String> {
    let mut r = Vec::new();
    let spec = &cell.cell;
    for rep in &cell.reps {
        let rep_no = rep.rep;
        let rp = &rep.report;
        if rp.verdict.saturated {
            r.push(format!(
                "rep {rep_no}: generator saturated ({})",
                rp.verdict.reasons.join("; ")
            ));
        }
        let errors = rp.counts.errors.total();
        if errors > 0 || rp.counts.timeouts > 0 {
            r.push(format!(
                "rep {rep_no}: {errors} errors, {} timeouts",
                rp.counts.timeouts
            ));
        }
        if rp.counts.non_2xx > 0 {
            r.push(format!(
                "rep {rep_no}: {} non-2xx responses",
                rp.counts.non_2xx
            ));
        }
        match spec.load {
            LoadModel::Closed {
                connections,
                pipeline,
            } if spec.keepalive && rp.latency_us.samples > 0 => {
                let l = f64::from(connections) * f64::from(pipeline);
                let lw = rp.requests_per_s * rp.latency_us.mean / 1e6;
                let gap = (lw - l).abs() / l;
                if gap > LITTLE_TOLERANCE {
                    r.push(format!(
                        "rep {rep_no}: Little's law off by {:.0} % (throughput × mean latency = {lw:.1}, concurrency = {l})",
                        gap * 100.0
                    ));
                }
            }
            LoadModel::Open { rate_per_s, .. } => {
                let ratio = rp.requests_per_s / rate_per_s;
                if ratio < MIN_OPEN_RATIO {
                    r.push(format!(
                        "rep {rep_no}: offered {rate_per_s:.0} req/s but achieved {:.0} ({:.0} %)",
                        rp.requests_per_s,
                        ratio * 100.0
                    ));
                }
            }
            _ => {}
        }
        if let Some(c) = &rep.cgroup
            && c.oom_kills.unwrap_or(0) > 0
        {
            r.push(format!("rep {rep_no}: OOM kill inside the memory limit"));
        }
    }
    let rps: Vec<f64> = cell
        .reps
        .iter()
        .filter(|x| x.rep > 0)
        .map(|x| x.report.requests_per_s)
        .collect();
    if let Some(cv) = stats::cv(&rps)
        && cv > MAX_CV
    {
        r.push(format!(
            "req/s CV {:.1} % > {:.0} %",
            cv * 100.0,
            MAX_CV * 100.0
        ));
    }
    if cell.verification.iter().any(|v| !v.passed) {
        r.push("verification failed".into());
    }
    for s in &cell.starts {
        if let Some(st) = &s.stop
            && !st.port_free_after
        {
            r.push(format!(
                "port {} still bound after stop (rep {})",
                s.port, s.rep
            ));
        }
    }
    if cell.status == CellStatus::Ok && (rps.len() as u32) < spec.repetitions {
        r.push(format!(
            "only {} of {} repetitions",
            rps.len(),
            spec.repetitions
        ));
    }
    r
}
