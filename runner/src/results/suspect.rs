//! When a number may not mean what it says: each reason is a sentence a reader can check.

use loadgen::LoadModel;

use crate::results::schema::{CellResult, CellSpec, CellStatus, RepResult};
use crate::results::stats;

/// Run-to-run spread above which throughput is called noisy.
pub const MAX_CV: f64 = 0.05;
/// Allowed relative gap between throughput × mean latency and the concurrency (Little's law).
pub const LITTLE_TOLERANCE: f64 = 0.10;
/// Open loop: achieved / offered below this = the schedule was not kept.
pub const MIN_OPEN_RATIO: f64 = 0.95;
/// Open loop: server CPU/request spread over repetitions above which the cell says why.
pub const MAX_OPEN_CPU_CV: f64 = 0.10;
/// Why open-loop CPU/request moves between repetitions (measured in docs/counted-cost.md).
const WAKEUP_CHARGE: &str = "the server sleeps between requests and the kernel charges each wake-up's latency to it (enqueue to switch-in: the IPI, a halted vCPU resuming, a neighbour running until preempted; 0.6-28 µs a wake-up measured on a 2-vCPU KVM guest), so CPU/request here moves with the machine's wake-up latency, not only with the service (docs/counted-cost.md)";

/// Every reason, per repetition first, then over the cell.
pub fn suspect_reasons(cell: &CellResult) -> Vec<String> {
    let mut r: Vec<String> = cell
        .reps
        .iter()
        .flat_map(|rep| rep_reasons(cell, rep))
        .collect();
    r.extend(cell_reasons(cell));
    r.extend(open_loop_cpu_spread(cell));
    r.extend(super::churn::suspect_reasons(cell));
    r
}

/// The generator's CPU per request and busiest thread beside the server's CPU per request
/// and share of its allowance, so a reader sees which side the cores were spent on ("" if
/// the server's CPU was not measured).
fn versus_server(cell: &CellResult, rep: &RepResult) -> String {
    let g = &rep.report.generator;
    let Some(server_us) = rep.server.cpu_us_per_request else {
        return String::new();
    };
    let share = rep
        .server_busy_share(&cell.cell.limits)
        .map_or(String::new(), |s| {
            format!(", {:.0} % of its CPU allowance busy", s * 100.0)
        });
    format!(
        "; generator {:.2} µs/request (busiest thread {:.0} % busy) vs server {server_us:.2} µs/request{share}",
        g.cpu_us_per_request,
        g.busiest_thread_busy * 100.0
    )
}

/// What one repetition's generator report and counters say against it.
fn rep_reasons(cell: &CellResult, rep: &RepResult) -> Vec<String> {
    let mut r = Vec::new();
    let rep_no = rep.rep;
    let rp = &rep.report;
    if rep.generator_saturated(&cell.cell.limits) {
        let floor = rep.floor_check.as_ref().map_or(String::new(), |f| {
            let split = f.split().map_or(String::new(), |s| {
                format!(
                    "; of it, the generator's own p99 {} µs (limit {} µs) and its wake-ups' lateness p99 {} µs",
                    s.own_p99_us, s.own_limit_us, s.wake_p99_us
                )
            });
            format!(
                "{split}; the machine's timer wake-up p99 at the run's start is {:.0} µs at {:.0}/s",
                f.floor_p99_us, f.floor_rate_per_s
            )
        });
        r.push(format!(
            "rep {rep_no}: generator saturated ({}{floor}{})",
            rep.generator_limits(&cell.cell.limits).join("; "),
            versus_server(cell, rep)
        ));
    }
    if let Some(f) = rep.floor_check.as_ref().filter(|_| rep.send_lag_excused()) {
        r.push(match f.split() {
            Some(s) => format!(
                "rep {rep_no}: at the machine's floor: send-lag p99 {} µs, but the generator's own part is p99 {} µs (within {} µs): its thread was woken or run late (wake-up lateness p99 {} µs in this repetition; timer wake-up p99 {:.0} µs at {:.0}/s at the run's start)",
                f.send_lag_p99_us,
                s.own_p99_us,
                s.own_limit_us,
                s.wake_p99_us,
                f.floor_p99_us,
                f.floor_rate_per_s
            ),
            None => format!(
                "rep {rep_no}: at the machine's floor: send-lag p99 {} µs against timer wake-up p99 {:.0} µs at {:.0}/s on this machine (the machine's lateness, not the generator's)",
                f.send_lag_p99_us, f.floor_p99_us, f.floor_rate_per_s
            ),
        });
    }
    for p in &rp.problems {
        r.push(format!("rep {rep_no}: {p}"));
    }
    let errors = rp.counts.errors.total();
    if rp.problems.is_empty() && (errors > 0 || rp.counts.timeouts > 0) {
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
    r.extend(load_model_reason(&cell.cell, rep));
    if let Some(c) = &rep.cgroup
        && c.oom_kills.unwrap_or(0) > 0
    {
        r.push(format!("rep {rep_no}: OOM kill inside the memory limit"));
    }
    if let Some(why) = &rep.server.cpu_unmeasured {
        r.push(format!("rep {rep_no}: server CPU unmeasured: {why}"));
    }
    r
}

/// Closed loop: Little's law; open loop: was the offered rate achieved.
fn load_model_reason(spec: &CellSpec, rep: &RepResult) -> Option<String> {
    let (rep_no, rp) = (rep.rep, &rep.report);
    match spec.load {
        LoadModel::Closed {
            connections,
            pipeline,
        } if spec.keepalive && rp.latency_us.samples > 0 => {
            let l = f64::from(connections) * f64::from(pipeline);
            let lw = rp.requests_per_s * rp.latency_us.mean / 1e6;
            let gap = (lw - l).abs() / l;
            (gap > LITTLE_TOLERANCE).then(|| {
                format!(
                    "rep {rep_no}: Little's law off by {:.0} % (throughput × mean latency = {lw:.1}, concurrency = {l})",
                    gap * 100.0
                )
            })
        }
        LoadModel::Open { rate_per_s, .. } => {
            let ratio = rp.requests_per_s / rate_per_s;
            (ratio < MIN_OPEN_RATIO).then(|| {
                format!(
                    "rep {rep_no}: offered {rate_per_s:.0} req/s but achieved {:.0} ({:.0} %)",
                    rp.requests_per_s,
                    ratio * 100.0
                )
            })
        }
        _ => None,
    }
}

/// Open loop: server CPU/request whose spread over repetitions exceeds [`MAX_OPEN_CPU_CV`],
/// with each repetition's CPU/request and wake-ups per request (voluntary context switches).
/// At a fixed low rate the server sleeps between requests, and the scheduler charges a woken
/// thread from the moment it was enqueued (a wake-up that preempts skips the clock update
/// before the switch), so the wake-up's latency — the IPI, a halted vCPU resuming, a
/// neighbour running until it is preempted — lands in its CPU time: CPU/request follows the
/// wake-ups per request times what one costs on the machine at that moment, which on a VM
/// moves between repetitions (docs/counted-cost.md).
fn open_loop_cpu_spread(cell: &CellResult) -> Option<String> {
    if !matches!(cell.cell.load, LoadModel::Open { .. }) {
        return None;
    }
    let reps: Vec<&RepResult> = cell.reps.iter().filter(|x| x.rep > 0).collect();
    let cpu: Vec<f64> = reps
        .iter()
        .filter_map(|x| x.server.cpu_us_per_request)
        .collect();
    let cv = stats::cv(&cpu).filter(|cv| *cv > MAX_OPEN_CPU_CV)?;
    let wakeups: Vec<Option<f64>> = reps
        .iter()
        .filter(|x| x.server.cpu_us_per_request.is_some())
        .map(|x| {
            x.counts
                .as_ref()
                .and_then(|c| c.server.wakeups_per_request())
        })
        .collect();
    let per_rep = cpu
        .iter()
        .map(|v| format!("{v:.1}"))
        .collect::<Vec<_>>()
        .join(" / ");
    let why = if wakeups.iter().all(Option::is_some) {
        let w: Vec<f64> = wakeups.into_iter().flatten().collect();
        let shown = w
            .iter()
            .map(|v| format!("{v:.2}"))
            .collect::<Vec<_>>()
            .join(" / ");
        // Where the wake-ups moved with the CPU time, what each extra one cost.
        let slope = wakeup_slope(&w, &cpu).map_or(String::new(), |s| {
            format!(", about {s:.0} µs of CPU per extra wake-up")
        });
        format!("at {shown} wake-ups/request{slope}: {WAKEUP_CHARGE}")
    } else {
        format!("(wake-ups per request not counted): {WAKEUP_CHARGE}")
    };
    Some(format!(
        "server CPU/request CV {:.0} % > {:.0} % at a fixed offered rate: {per_rep} µs per repetition {why}",
        cv * 100.0,
        MAX_OPEN_CPU_CV * 100.0
    ))
}

/// Least-squares slope of `y` on `x`, when `x` varies by more than 10 % of its mean (else the
/// wake-ups did not move and their slope means nothing) and the slope is positive.
fn wakeup_slope(x: &[f64], y: &[f64]) -> Option<f64> {
    let (mx, my) = (stats::mean(x)?, stats::mean(y)?);
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let spread =
        x.iter().cloned().fold(f64::MIN, f64::max) - x.iter().cloned().fold(f64::MAX, f64::min);
    (mx > 0.0 && spread > 0.1 * mx && sxx > 0.0)
        .then(|| sxy / sxx)
        .filter(|s| *s > 0.0)
}

/// Over the cell: spread, workers, verification, ports, missing repetitions.
fn cell_reasons(cell: &CellResult) -> Vec<String> {
    let mut r = Vec::new();
    let spec = &cell.cell;
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
    if let Some(w) = cell.startup_line.as_ref().map(|b| b.workers)
        && w != spec.limits.workers as usize
    {
        r.push(format!(
            "service reports {w} workers, {} requested",
            spec.limits.workers
        ));
    }
    if cell.verification.iter().any(|v| !v.passed) {
        r.push("verification failed".into());
    }
    for s in &cell.starts {
        if let Some(st) = &s.stop
            && !st.escaped_killed.is_empty()
        {
            r.push(format!(
                "rep {}: {} left the service's process group and outlived it (killed at the stop)",
                s.rep,
                st.escaped_killed.join(", ")
            ));
        }
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
    if cell.status == CellStatus::Ok
        && cell.cell.churn.is_none()
        && (rps.len() as u32) < spec.repetitions
    {
        r.push(format!(
            "only {} of {} repetitions",
            rps.len(),
            spec.repetitions
        ));
    }
    r
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::schema::{CellSpec, ProfileLimits, RepResult, ServerUsage};
    use loadgen::Report;
    use loadgen::report::{Counts, Generator, Percentiles, Saturation};

    pub(crate) fn spec(load: LoadModel) -> CellSpec {
        CellSpec {
            key: "s__p__c4__x".into(),
            service: "s".into(),
            scenario: "p".into(),
            level: "c4".into(),
            profile: "x".into(),
            path: "/ping".into(),
            load,
            keepalive: true,
            headers: vec![],
            protocol: Default::default(),
            loadgen_threads: 1,
            repetitions: 3,
            warmup_ms: 0,
            duration_ms: 1000,
            cooldown_ms: 0,
            request_timeout_ms: 1000,
            expect_body_bytes: None,
            limits: ProfileLimits {
                server_cpus: vec![0],
                loadgen_cpus: vec![0],
                cpu_quota: None,
                memory_max_bytes: None,
                workers: 1,
            },
            service_args: vec![],
            churn: None,
            adaptive: None,
            arm: None,
            hosts: None,
            external: false,
        }
    }

    /// A report where `rps` × `mean_latency_us` is consistent with 4 in flight unless skewed.
    pub(crate) fn report(cell: &CellSpec, rps: f64, mean_latency_us: f64) -> Report {
        let lat = Percentiles {
            samples: rps as u64,
            mean: mean_latency_us,
            ..Percentiles::default()
        };
        Report {
            schema_version: 1,
            loadgen_version: "test".into(),
            spec: cell.load_spec(1),
            started_unix_ms: 0,
            window_s: 1.0,
            requests_per_s: rps,
            ok_per_s: rps,
            latency_us: lat.clone(),
            service_time_us: lat,
            send_lag_us: None,
            schedule_lag_us: None,
            wake_lag_us: None,
            own_lag_us: None,
            counts: Counts::default(),
            connections: Default::default(),
            connection_setup: None,
            tls: None,
            status_counts: Default::default(),
            bytes_read: 0,
            bytes_written: 0,
            timeline: vec![],
            generator: Generator::default(),
            verdict: Saturation::default(),
            latency_hdr_v2_b64: String::new(),
            open_loop_hdr_v2_b64: None,
            problems: vec![],
        }
    }

    /// Repetition `rep` of `cell` with [`report`]'s numbers and nothing else measured.
    pub(crate) fn rep(cell: &CellSpec, rep: u32, rps: f64, mean_latency_us: f64) -> RepResult {
        RepResult {
            rep,
            started_unix_ms: 0,
            session: None,
            report: report(cell, rps, mean_latency_us),
            server: ServerUsage::default(),
            cgroup: None,
            loadgen_exit_code: Some(0),
            floor_check: None,
            generators: vec![],
            counts: None,
            instructions: None,
        }
    }

    fn cell_with(load: LoadModel, reps: &[(f64, f64)]) -> CellResult {
        let s = spec(load);
        let mut c = CellResult::new("run", &s);
        c.status = CellStatus::Ok;
        c.reps = reps
            .iter()
            .enumerate()
            .map(|(i, (rps, lat))| rep(&s, i as u32 + 1, *rps, *lat))
            .collect();
        c
    }

    const CLOSED4: LoadModel = LoadModel::Closed {
        connections: 4,
        pipeline: 1,
    };

    /// One closed-loop repetition whose generator thread was `gen_busy` busy at
    /// `gen_us` µs/request and whose server used `server_cores` cores at `server_us`.
    fn busy_rep(gen_busy: f64, gen_us: f64, server_cores: f64, server_us: f64) -> CellResult {
        let mut c = cell_with(CLOSED4, &[(40_000.0, 100.0)]);
        let rep = &mut c.reps[0];
        rep.report.verdict = Saturation {
            saturated: true,
            reasons: vec![format!(
                "a generator thread was {:.0} % busy, spin-waits excluded (limit 90 %)",
                gen_busy * 100.0
            )],
        };
        rep.report.generator.cpu_us_per_request = gen_us;
        rep.report.generator.busiest_thread_busy = gen_busy;
        rep.server.cpu_us_per_request = Some(server_us);
        rep.server.cpu_cores_busy = Some(server_cores);
        c
    }

    #[test]
    fn a_busy_generator_beside_a_server_with_headroom_is_saturated() {
        // The server used 60 % of its one core: the generator set the pace.
        let c = busy_rep(0.95, 3.1, 0.60, 2.0);
        assert!(c.reps[0].generator_saturated(&c.cell.limits));
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("generator saturated (a generator thread was 95 % busy")
                && r.contains(
                    "generator 3.10 µs/request (busiest thread 95 % busy) vs server 2.00 µs/request, 60 % of its CPU allowance busy"
                ),
            "{r}"
        );
    }

    #[test]
    fn a_busy_generator_beside_a_server_at_its_ceiling_is_not_saturated() {
        // Both sides ~full: the server's capacity is what was measured.
        let c = busy_rep(0.95, 3.1, 0.97, 3.6);
        assert!(c.reps[0].server_at_ceiling(&c.cell.limits));
        assert!(!c.reps[0].generator_saturated(&c.cell.limits));
        let r = suspect_reasons(&c);
        assert!(!r.iter().any(|r| r.contains("saturated")), "{r:?}");
    }

    #[test]
    fn the_ceiling_is_the_quota_when_there_is_one() {
        // 0.45 cores busy: at the ceiling of a 0.5-CPU quota, not of the pinned core.
        let mut c = busy_rep(0.95, 3.1, 0.45, 3.6);
        assert!(c.reps[0].generator_saturated(&c.cell.limits));
        c.cell.limits.cpu_quota = Some(0.5);
        assert!(!c.reps[0].generator_saturated(&c.cell.limits));
    }

    #[test]
    fn an_unknown_server_allowance_leaves_the_generators_verdict() {
        let mut c = busy_rep(0.95, 3.1, 0.99, 3.6);
        c.cell.limits.server_cpus.clear();
        assert_eq!(c.reps[0].server_busy_share(&c.cell.limits), None);
        assert!(c.reps[0].generator_saturated(&c.cell.limits));
        c.reps[0].server.cpu_cores_busy = None;
        c.cell.limits.server_cpus = vec![0];
        assert!(c.reps[0].generator_saturated(&c.cell.limits));
    }

    #[test]
    fn clean_cell_has_no_reasons() {
        // 4 in flight, 40k req/s → mean latency 100 µs.
        let c = cell_with(
            CLOSED4,
            &[(40_000.0, 100.0), (40_100.0, 99.8), (39_900.0, 100.2)],
        );
        assert!(suspect_reasons(&c).is_empty(), "{:?}", suspect_reasons(&c));
    }

    #[test]
    fn cv_above_five_percent_is_flagged() {
        let c = cell_with(
            CLOSED4,
            &[(40_000.0, 100.0), (30_000.0, 133.3), (50_000.0, 80.0)],
        );
        let r = suspect_reasons(&c).join("; ");
        assert!(r.contains("CV"), "{r}");
    }

    #[test]
    fn littles_law_mismatch_is_flagged() {
        // 40k req/s × 200 µs = 8 in flight, but only 4 connections.
        let c = cell_with(
            CLOSED4,
            &[(40_000.0, 200.0), (40_000.0, 200.0), (40_000.0, 200.0)],
        );
        let r = suspect_reasons(&c).join("; ");
        assert!(r.contains("Little's law off by 100 %"), "{r}");
    }

    #[test]
    fn saturation_errors_and_missing_reps_are_flagged() {
        let mut c = cell_with(CLOSED4, &[(40_000.0, 100.0), (40_000.0, 100.0)]);
        c.reps[0].report.verdict = Saturation {
            saturated: true,
            reasons: vec!["busy".into()],
        };
        c.reps[1].report.counts.timeouts = 3;
        let r = suspect_reasons(&c).join("; ");
        assert!(r.contains("rep 1: generator saturated (busy)"), "{r}");
        assert!(r.contains("rep 2: 0 errors, 3 timeouts"), "{r}");
        assert!(r.contains("only 2 of 3 repetitions"), "{r}");
    }

    #[test]
    fn send_lag_at_the_machines_floor_is_not_generator_saturation() {
        let open = LoadModel::Open {
            rate_per_s: 5_000.0,
            connections: 8,
            coalesce_us: loadgen::DEFAULT_COALESCE_US,
        };
        let mut c = cell_with(open, &[(5_000.0, 100.0), (5_000.0, 100.0)]);
        let lag = "send-lag p99 of requests with a free connection is 2900 µs, above 200 µs";
        for rep in &mut c.reps {
            rep.report.verdict = Saturation {
                saturated: true,
                reasons: vec![lag.into()],
            };
            rep.floor_check = Some(crate::results::schema::FloorCheck {
                send_lag_p99_us: 2900,
                floor_p99_us: 2000.0,
                floor_rate_per_s: 5000.0,
                wake_lag_p99_us: None,
                own_lag_p99_us: None,
                own_lag_limit_us: None,
                at_floor: true,
            });
        }
        // Rep 2 was also busy: that reason stands.
        c.reps[1]
            .report
            .verdict
            .reasons
            .push("a generator thread was 95 % busy".into());
        let r = suspect_reasons(&c).join("; ");
        assert!(!r.contains("rep 1: generator saturated"), "{r}");
        assert!(
            r.contains("rep 1: at the machine's floor: send-lag p99 2900 µs against timer wake-up p99 2000 µs at 5000/s"),
            "{r}"
        );
        assert!(
            r.contains("rep 2: generator saturated (a generator thread was 95 % busy; the machine"),
            "{r}"
        );
        assert!(!c.reps[0].generator_saturated(&c.cell.limits));
        assert!(c.reps[1].generator_saturated(&c.cell.limits));
        // Above the floor it stays the generator's.
        c.reps[0].floor_check.as_mut().unwrap().at_floor = false;
        assert!(c.reps[0].generator_saturated(&c.cell.limits));
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("above 200 µs; the machine's timer wake-up p99 at the run's start is 2000 µs at 5000/s)"),
            "{r}"
        );
    }

    #[test]
    fn the_generators_own_part_of_the_send_lag_is_shown_beside_it() {
        let open = LoadModel::Open {
            rate_per_s: 5_000.0,
            connections: 64,
            coalesce_us: loadgen::DEFAULT_COALESCE_US,
        };
        let mut c = cell_with(
            open,
            &[(5_000.0, 100.0), (5_000.0, 100.0), (5_000.0, 100.0)],
        );
        let lag = "send-lag p99 of requests with a free connection is 640 µs, above 200 µs";
        // (wake p99, own p99, at floor, loadgen flagged the lag)
        let reps = [
            (610, 30, true, true),
            (40, 600, false, true),
            (30, 20, true, false),
        ];
        for (rep, (wake, own, at_floor, flagged)) in c.reps.iter_mut().zip(reps) {
            rep.report.verdict = Saturation {
                saturated: flagged,
                reasons: if flagged { vec![lag.into()] } else { vec![] },
            };
            rep.floor_check = Some(crate::results::schema::FloorCheck {
                send_lag_p99_us: if flagged { 640 } else { 50 },
                floor_p99_us: 55.0,
                floor_rate_per_s: 5000.0,
                wake_lag_p99_us: Some(wake),
                own_lag_p99_us: Some(own),
                own_lag_limit_us: Some(200),
                at_floor,
            });
        }
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("rep 1: at the machine's floor: send-lag p99 640 µs, but the generator's own part is p99 30 µs (within 200 µs): its thread was woken or run late (wake-up lateness p99 610 µs in this repetition; timer wake-up p99 55 µs at 5000/s at the run's start)"),
            "{r}"
        );
        assert!(
            r.contains("rep 2: generator saturated (send-lag p99 of requests with a free connection is 640 µs, above 200 µs; of it, the generator's own p99 600 µs (limit 200 µs) and its wake-ups' lateness p99 40 µs; the machine's timer wake-up p99 at the run's start is 55 µs at 5000/s)"),
            "{r}"
        );
        // A lag loadgen did not flag needs no excuse.
        assert!(!r.contains("rep 3"), "{r}");
        assert!(
            !c.reps[0].generator_saturated(&c.cell.limits)
                && c.reps[1].generator_saturated(&c.cell.limits)
        );
    }

    #[test]
    fn open_loop_rate_not_kept_is_flagged() {
        let open = LoadModel::Open {
            rate_per_s: 10_000.0,
            connections: 8,
            coalesce_us: loadgen::DEFAULT_COALESCE_US,
        };
        let c = cell_with(
            open,
            &[(9_000.0, 100.0), (9_000.0, 100.0), (9_000.0, 100.0)],
        );
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("offered 10000 req/s but achieved 9000 (90 %)"),
            "{r}"
        );
    }

    fn open_cell(cpu_wakeups: &[(f64, Option<f64>)]) -> CellResult {
        let open = LoadModel::Open {
            rate_per_s: 20_000.0,
            connections: 64,
            coalesce_us: loadgen::DEFAULT_COALESCE_US,
        };
        let mut c = cell_with(open, &vec![(20_000.0, 100.0); cpu_wakeups.len()]);
        for (rep, (cpu, wakeups)) in c.reps.iter_mut().zip(cpu_wakeups) {
            rep.server.cpu_us_per_request = Some(*cpu);
            rep.counts = wakeups.map(|w| crate::results::schema::RepCounts {
                server: crate::results::schema::ProcessCounts {
                    responses: 40_000,
                    voluntary_ctx_switches: Some(w * 40_000.0),
                    involuntary_ctx_switches: Some(0.0),
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        c
    }

    #[test]
    fn open_loop_cpu_spread_names_the_wakeups_per_request() {
        // The bimodal r20000 cell: two repetitions slept twice as often.
        let c = open_cell(&[(16.2, Some(0.48)), (16.7, Some(0.49)), (8.6, Some(0.21))]);
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("server CPU/request CV 33 % > 10 % at a fixed offered rate: 16.2 / 16.7 / 8.6 µs per repetition at 0.48 / 0.49 / 0.21 wake-ups/request, about 29 µs of CPU per extra wake-up: the server sleeps between requests and the kernel charges each wake-up's latency to it"),
            "{r}"
        );
        // Wake-ups that did not move: no slope is claimed.
        let c = open_cell(&[(16.2, Some(0.48)), (16.7, Some(0.48)), (8.6, Some(0.47))]);
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("at 0.48 / 0.48 / 0.47 wake-ups/request: the server sleeps"),
            "{r}"
        );
        // Not counted: said so, and the reason stands.
        let c = open_cell(&[(16.2, Some(0.48)), (16.7, None), (8.6, Some(0.21))]);
        let r = suspect_reasons(&c).join("; ");
        assert!(
            r.contains("µs per repetition (wake-ups per request not counted): the server sleeps"),
            "{r}"
        );
    }

    #[test]
    fn open_loop_cpu_within_ten_percent_or_closed_loop_is_not_flagged() {
        let c = open_cell(&[(10.0, Some(0.3)), (10.5, Some(0.3)), (9.8, Some(0.3))]);
        assert!(suspect_reasons(&c).is_empty(), "{:?}", suspect_reasons(&c));
        let mut c = cell_with(
            CLOSED4,
            &[(40_000.0, 100.0), (40_000.0, 100.0), (40_000.0, 100.0)],
        );
        for (rep, cpu) in c.reps.iter_mut().zip([16.2, 16.7, 8.6]) {
            rep.server.cpu_us_per_request = Some(cpu);
        }
        assert!(suspect_reasons(&c).is_empty(), "{:?}", suspect_reasons(&c));
    }
}
