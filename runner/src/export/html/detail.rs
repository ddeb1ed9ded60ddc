//! A cell's detail, one click away on its page: every repetition with its generator report
//! (complete but for the encoded latency histogram, which stays in `cells/<key>.json`), the
//! server's usage and cgroup counters, every start, the churn cycles, verification and the
//! failure. Kept apart from the leaderboard rows so the page's size is spent once.

use serde::Serialize;

use crate::results::churn::ChurnRep;
use crate::results::schema::{
    CellResult, EndpointCheck, Failure, ProfileLimits, RepResult, StartRecord,
};

/// Fields of the generator report not embedded: the HDR histogram (kilobytes of base64 per
/// repetition, already summarised by its percentiles) and the spec (the cell's own).
const OMITTED_REPORT_FIELDS: [&str; 2] = ["latency_hdr_v2_b64", "spec"];

#[derive(Debug, Clone, Serialize)]
pub struct Detail<'a> {
    pub reps: Vec<Rep<'a>>,
    pub starts: &'a [StartRecord],
    pub churn: &'a [ChurnRep],
    pub verification: Vec<Check<'a>>,
    pub failure: Option<&'a Failure>,
    pub limits_notes: Vec<String>,
    pub omitted: &'static [&'static str],
}

#[derive(Debug, Clone, Serialize)]
pub struct Rep<'a> {
    pub rep: u32,
    pub started_unix_ms: u64,
    pub report: serde_json::Value,
    pub server: &'a crate::results::schema::ServerUsage,
    pub cgroup: Option<&'a crate::results::schema::CgroupCounters>,
    pub loadgen_exit_code: Option<i32>,
    pub floor_check: Option<&'a crate::results::schema::FloorCheck>,
    /// Saturation reasons that stand after the floor check.
    pub generator_limits: Vec<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check<'a> {
    pub path: &'a str,
    pub passed: bool,
    pub status: Option<u16>,
    pub problems: &'a [String],
}

fn rep<'a>(r: &'a RepResult, limits: &ProfileLimits) -> Rep<'a> {
    let mut report = serde_json::to_value(&r.report).unwrap_or(serde_json::Value::Null);
    if let Some(o) = report.as_object_mut() {
        for f in OMITTED_REPORT_FIELDS {
            o.remove(f);
        }
    }
    Rep {
        rep: r.rep,
        started_unix_ms: r.started_unix_ms,
        report,
        server: &r.server,
        cgroup: r.cgroup.as_ref(),
        loadgen_exit_code: r.loadgen_exit_code,
        floor_check: r.floor_check.as_ref(),
        generator_limits: r.generator_limits(limits),
    }
}

fn check(c: &EndpointCheck) -> Check<'_> {
    Check {
        path: &c.path,
        passed: c.passed,
        status: c.status,
        problems: &c.problems,
    }
}

pub fn of(c: &CellResult) -> Detail<'_> {
    Detail {
        reps: c.reps.iter().map(|r| rep(r, &c.cell.limits)).collect(),
        starts: &c.starts,
        churn: &c.churn,
        verification: c.verification.iter().map(check).collect(),
        failure: c.failure.as_ref(),
        limits_notes: c
            .limits
            .as_ref()
            .map(|l| l.notes.clone())
            .unwrap_or_default(),
        omitted: &OMITTED_REPORT_FIELDS,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use crate::results::fixture::{REAL_CELL, cell_with_rps};

    #[test]
    fn the_detail_keeps_every_repetition_but_not_the_histogram_blob() {
        let c: CellResult = serde_json::from_str(REAL_CELL).unwrap();
        let d = of(&c);
        assert_eq!(d.reps.len(), c.reps.len());
        let json = serde_json::to_value(&d).unwrap();
        let r0 = &json["reps"][0]["report"];
        assert!(r0.get("latency_hdr_v2_b64").is_none());
        assert_eq!(r0["requests_per_s"], c.reps[0].report.requests_per_s);
        assert_eq!(
            r0["latency_us"]["p99"].as_u64(),
            Some(c.reps[0].report.latency_us.p99)
        );
        assert_eq!(json["starts"].as_array().unwrap().len(), c.starts.len());
        let full = serde_json::to_string(&c).unwrap().len();
        let small = serde_json::to_string(&d).unwrap().len();
        assert!(small * 2 < full, "detail {small} B of a {full} B cell file");
    }
}
