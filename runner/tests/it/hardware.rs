//! Hardware counters per request (`instructions:u`, `instructions:k`, `cycles`) through a
//! stand-in perf named by `$PINGMATRIX_PERF`, on a real `matrix run` of ping-epoll with the
//! exact count on (`cargo build --workspace --bins` first): one stand-in reports counts, one
//! answers `<not supported>` as perf does on a VM without a PMU.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::live;

use live::{Scratch, bin, only_run_dir, out_text, read, script, tiny_matrix};
use runner::results::schema::{CellResult, ResultsFile};

/// One closed-loop cell of ping-epoll, one repetition, syscalls counted exactly.
fn run(d: &Path, tag: &str, perf: &Path) -> (CellResult, ResultsFile, String) {
    let text = tiny_matrix(
        &[("epoll", bin("ping-epoll"), "")],
        1,
        "count_syscalls = true",
        "",
    );
    let dir = d.join(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let m = live::write_config(&dir, &text);
    let out = dir.join("out");
    let o = live::matrix_at(&m, &out, &["run", "--quiet", "--only", "scenario=ping"])
        .env(runner::flamegraph::PERF_ENV, perf)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    let results: ResultsFile = read(&run_dir.join("results.json"));
    assert_eq!(results.cells.len(), 1);
    let cell: CellResult = read(
        &run_dir
            .join("cells")
            .join(format!("{}.json", results.cells[0].key)),
    );
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    (cell, results, md)
}

/// Whether the real perf counts the syscall tracepoint here (the counting stand-in uses it).
fn perf_counts_syscalls() -> bool {
    Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            runner::count::perf::EVENT,
            "--",
            "true",
        ])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && runner::count::perf::total(&String::from_utf8_lossy(&o.stderr)).is_some()
        })
}

/// A perf standing in for a machine with hardware counters: the real perf counts the
/// server's syscalls every 100 ms, and each interval's count n is reported as 1,000 n
/// `instructions:u`, 2,000 n `instructions:k` and 3,000 n `cycles` — so per request they must
/// read exactly 1,000, 2,000 and 3,000 times the syscalls the suite's own perf counted over
/// the same loads. `exec`: the runner's SIGINT reaches perf, which prints its last interval.
/// Anything but the hardware count is the real perf's, as with every `$PINGMATRIX_PERF`.
fn counting_perf(dir: &Path) -> PathBuf {
    let p = dir.join("perf-with-pmu");
    std::fs::write(
        &p,
        r#"#!/bin/bash
case "$*" in *instructions:u*) ;; *) exec perf "$@" ;; esac
pid=${@: -1}
exec perf stat -x, -I 100 -e raw_syscalls:sys_enter -p "$pid" 2> >(awk -F, '
  $4 == "raw_syscalls:sys_enter" {
    n = ($2 ~ /^</) ? 0 : $2
    printf "%s,%d,,instructions:u,%s,100.00,,\n", $1, n * 1000, $5
    printf "%s,%d,,instructions:k,%s,100.00,,\n", $1, n * 2000, $5
    printf "%s,%d,,cycles,%s,100.00,,\n", $1, n * 3000, $5
    fflush(); next
  }
  { print; fflush() }' >&2)
"#,
    )
    .unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

#[test]
fn hardware_counters_come_from_perf_and_read_unmeasured_without_a_pmu() {
    let d = Scratch::new("hw");

    // No PMU: perf refuses every event, as `perf stat -e instructions:u -- true` does on the
    // shared VMs. Never 0: unmeasured with perf's words, and results.md says so in one line.
    // Every other use (the syscall count, the recording that names them, its version) is the
    // real perf's: the runner runs this one perf for all of them.
    let vm = script(
        &d.0,
        "perf-without-pmu",
        "case \"$*\" in *instructions:u*) ;; *) exec perf \"$@\" ;; esac\n\
         while :; do sleep 0.1; for e in instructions:u instructions:k cycles; do echo \"     0.100180155,<not supported>,,$e,0,100.00,,\" >&2; done; done",
    );
    let (cell, results, md) = run(&d.0, "vm", &vm);
    let why = "no hardware counters (perf: instructions:u <not supported>, instructions:k <not supported>, cycles <not supported>)";
    for r in &cell.reps {
        let c = r.counts.as_ref().expect("counts");
        let h = c.server.hardware.as_ref().expect("hardware tried");
        assert_eq!(
            (h.instructions_user, h.instructions_kernel, h.cycles),
            (None, None, None),
            "{h:?}"
        );
        assert_eq!(h.unmeasured.as_deref(), Some(why), "{h:?}");
        assert!(c.loadgen.hardware.is_none(), "the server only");
    }
    let k = results.cells[0].counted.as_ref().expect("counted");
    let hs = k.server.hardware.as_ref().expect("summarized");
    assert_eq!(hs.unmeasured.as_deref(), Some(why));
    assert!(hs.instructions_user.is_none());
    assert!(!md.contains("instructions:u (perf)"), "{md}");
    assert!(
        md.contains(&format!(
            "per request over the same two loads as the syscalls): unmeasured: {why}."
        )),
        "{md}"
    );

    if !perf_counts_syscalls() {
        eprintln!("SKIPPED the counting stand-in: perf cannot count syscalls here");
        return;
    }
    let (cell, _, md) = run(&d.0, "pmu", &counting_perf(&d.0));
    for r in &cell.reps {
        let c = r.counts.as_ref().expect("counts");
        let h = c.server.hardware.as_ref().expect("hardware");
        let Some(sys) = c.server.syscalls_per_request() else {
            panic!("syscalls unmeasured: {:?}", c.server.syscalls_unmeasured);
        };
        assert_eq!(h.unmeasured, None, "{h:?}");
        assert_eq!(
            h.responses, c.server.syscall_window_responses,
            "the same two loads"
        );
        assert_eq!(h.points.len(), 2, "{h:?}");
        for (got, times) in [
            (h.instructions_user_per_request(), 1_000.0),
            (h.instructions_kernel_per_request(), 2_000.0),
            (h.cycles_per_request(), 3_000.0),
        ] {
            let got = got.expect("counted");
            // Two perfs of one tracepoint, cut at their own points in the same idle gaps.
            assert!(
                (got / (sys * times) - 1.0).abs() < 0.01,
                "{got} per request where the syscalls were {sys}: {h:?}"
            );
        }
    }
    assert!(
        md.contains("| instructions:u (perf) | instructions:k (perf) | cycles (perf) |"),
        "{md}"
    );
    assert!(md.contains("Hardware counters: `perf stat -e instructions:u,instructions:k,cycles`"));
}
