//! End-to-end: a connection-churn scenario through the real `matrix` against the real
//! `ping-tokio-hyper`: every cycle's accounting is exact (opened = served + failed), RSS is
//! read after opening and after closing, and results.md carries the "Connection churn"
//! table instead of a throughput table.

use crate::support;
use std::time::Instant;

use crate::support::live;

use live::{Scratch, bin, read};
use runner::limits::cpus::allowed_cpus;
use runner::results::churn::ChurnVerdict;
use runner::results::schema::{CellResult, CellStatus, ResultsFile};

#[test]
fn churn_cells_run_against_a_real_service_and_get_their_own_table() {
    let _machine = support::busy();
    let d = Scratch(std::env::temp_dir().join(format!(
        "pingmatrix-churn-e2e-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    )));
    let _ = std::fs::remove_dir_all(&d.0);
    std::fs::create_dir_all(&d.0).unwrap();
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
load = {{ model = "churn", connections = [40], cycles = 3 }}

[[profiles]]
name = "pinned"
server_cpus = "{s}"
loadgen_cpus = "{l}"
"#,
        bin("loadgen").display(),
        bin("ping-tokio-hyper").display()
    );
    let m = live::write_config(&d.0, &text);
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
