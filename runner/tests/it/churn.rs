//! End-to-end: a connection-churn scenario through the real `matrix` against the real
//! `ping-tokio-hyper`: every cycle's accounting is exact (opened = served + failed), RSS is
//! read after opening and after closing, and results.md carries the "Connection churn"
//! table instead of a throughput table. A service that dies partway (a CPU-time limit)
//! fails the cell, and the cycles it finished are kept, flagged partial, with the reason.

use std::path::{Path, PathBuf};

use crate::support::live;

use live::{Scratch, bin, read};
use runner::limits::cpus::allowed_cpus;
use runner::results::churn::ChurnVerdict;
use runner::results::schema::{CellResult, CellStatus, ResultsFile};

/// A matrix in `dir` of one churn cell (`connections` × `cycles`, 2 repetitions) on
/// `binary`, the service on the first allowed CPU, the runner's client on the last.
fn churn_matrix(dir: &Path, binary: &Path, connections: u32, cycles: u32) -> PathBuf {
    let a = allowed_cpus();
    let (s, l) = (a[0], *a.last().unwrap());
    let text = format!(
        r#"[defaults]
repetitions = 2
cooldown_ms = 0
startup_timeout_ms = 3000
stop_grace_ms = 1000
loadgen = "{}"

[[services]]
name = "hyper"
binary = "{}"

[[scenarios]]
name = "churn"
path = "/ping"
load = {{ model = "churn", connections = [{connections}], cycles = {cycles} }}

[[profiles]]
name = "pinned"
server_cpus = "{s}"
loadgen_cpus = "{l}"
"#,
        bin("loadgen").display(),
        binary.display()
    );
    live::write_config(dir, &text)
}

#[test]
fn churn_cells_run_against_a_real_service_and_get_their_own_table() {
    let d = Scratch::new("churn");
    let m = churn_matrix(&d.0, &bin("ping-tokio-hyper"), 40, 3);
    let out = d.0.join("results");
    let o = live::matrix_at(&m, &out, &["run"]).output().unwrap();
    let all = format!(
        "{:?}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{all}");
    let run_dir = live::only_run_dir(&out);

    let cell: CellResult = read(&run_dir.join("cells/hyper__churn__c40x3__pinned.json"));
    assert_eq!(cell.status, CellStatus::Ok, "{:?}", cell.failure);
    assert!(cell.reps.is_empty(), "loadgen must not run for churn");
    assert_eq!(cell.churn.len(), 2);
    assert_eq!(cell.starts.len(), 2);
    for (i, rep) in cell.churn.iter().enumerate() {
        assert_eq!(rep.rep, i as u32 + 1);
        assert!(rep.rss_before_bytes.is_some_and(|b| b > 0));
        assert_eq!(rep.cycles.len(), 3);
        for (j, c) in rep.cycles.iter().enumerate() {
            assert_eq!(c.cycle, j as u32 + 1);
            assert_eq!(c.opened, 40);
            assert_eq!(c.served + c.failed, c.opened);
            assert_eq!(c.failed, 0, "{c:?}");
            assert!(c.rss_open_bytes.is_some_and(|b| b > 0));
            assert!(c.rss_closed_bytes.is_some_and(|b| b > 0));
            // RSS after closing is read once the service has closed them all.
            assert!(c.fds_idle.is_some_and(|n| n > 0), "{c:?}");
            assert!(c.fd_settle_ms.is_some(), "{c:?}");
            assert!(c.settle_ms >= c.fd_settle_ms.unwrap(), "{c:?}");
        }
    }

    let results: ResultsFile = read(&run_dir.join("results.json"));
    let s = results.cells[0].churn.as_ref().expect("churn summary");
    assert_eq!((s.connections, s.cycles, s.n), (40, 3, 2));
    assert_eq!((s.opened, s.failed), (240, 0));
    assert_eq!(s.rss_closed_bytes.len(), 3);
    assert!(s.rss_first_bytes.is_some() && s.rss_last_bytes.is_some());
    assert_ne!(s.verdict, ChurnVerdict::Unknown);
    assert!(
        !results.cells[0].suspect,
        "{:?}",
        results.cells[0].suspect_reasons
    );

    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(md.contains("## Connection churn"), "{md}");
    assert!(md.contains("| hyper | churn | pinned | 40 × 3 |"), "{md}");
    assert!(md.contains("0 of 240"), "{md}");
    assert!(
        !md.contains("### churn · profile"),
        "no throughput table: {md}"
    );
}

/// The service under a CPU-time limit that it reaches partway (2 ms of CPU per request, 1 s
/// allowed: about 500 requests, 40 per cycle): it is killed in some cycle K > 1. The cell
/// fails with the reason, and repetition 1 keeps its K − 1 finished cycles, flagged partial.
#[test]
fn a_churn_repetition_cut_short_keeps_its_finished_cycles() {
    let d = Scratch::new("churn-partial");
    let wrapper = d.0.join("limited-hyper");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec prlimit --cpu=1 -- {} --burn-ns 2000000 \"$@\"\n",
            bin("ping-tokio-hyper").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let m = churn_matrix(&d.0, &wrapper, 40, 40);
    let out = d.0.join("results");
    let o = live::matrix_at(&m, &out, &["run"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", live::out_text(&o));
    let run_dir = live::only_run_dir(&out);
    let cell: CellResult = read(&run_dir.join("cells/hyper__churn__c40x40__pinned.json"));
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.as_ref().unwrap().reason.clone();
    let k: usize = why
        .strip_prefix("service exited during churn cycle ")
        .and_then(|r| r.split(' ').next())
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(
        k > 1,
        "died in the first cycle; the test proves nothing: {why}"
    );
    assert_eq!(cell.churn.len(), 1, "only repetition 1 ran");
    let rep = &cell.churn[0];
    assert_eq!(rep.partial.as_deref(), Some(why.as_str()));
    assert_eq!(rep.cycles.len(), k - 1, "{why}");
    for (j, c) in rep.cycles.iter().enumerate() {
        assert_eq!(c.cycle as usize, j + 1);
        assert_eq!((c.served, c.failed), (40, 0), "{c:?}");
        assert!(c.rss_closed_bytes.is_some());
    }
}
