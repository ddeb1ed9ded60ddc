//! The run's floors where they cannot be measured: run.json and results.md say why, and the
//! run goes on with every cell measured.

use crate::support::live;

use std::os::unix::fs::PermissionsExt;

use live::{Scratch, bin, matrix_at, only_run_dir, out_text, read, tiny_matrix, write_config};
use runner::results::schema::{CellResult, CellStatus, RunRecord};

#[test]
fn a_machine_floor_that_cannot_be_measured_is_recorded_with_its_reason_and_the_run_goes_on() {
    let d = Scratch::new("floors");
    // A loadgen that loads like the real one but refuses `--floor`, as it would on a kernel
    // without the clock it sleeps on.
    let real = bin("loadgen");
    let fake = d.0.join("loadgen-no-floor");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --floor ]; then\n    echo 'clock_nanosleep: Operation not supported' >&2\n    exit 3\n  fi\ndone\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let toml = tiny_matrix(&[("hyper", bin("ping-tokio-hyper"), "")], 1, "", "").replace(
        &format!("loadgen = \"{}\"", real.display()),
        &format!("loadgen = \"{}\"", fake.display()),
    );
    assert!(toml.contains("loadgen-no-floor"), "{toml}");
    let config = write_config(&d.0, &toml);
    let out_dir = d.0.join("out");
    let out = matrix_at(&config, &out_dir, &["run", "--quiet"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));

    let run_dir = only_run_dir(&out_dir);
    let run: RunRecord = read(&run_dir.join("run.json"));
    let floors = run.floors.expect("floors are always recorded");
    let machine = floors
        .machine
        .expect("an open-loop cell asks for the machine floor");
    assert!(machine.report.is_none(), "{machine:?}");
    let why = machine.unavailable.expect("the reason");
    assert!(
        why.contains("loadgen --floor") && why.contains('3'),
        "reason names the command and its exit: {why}"
    );
    // The start-up floor does not depend on loadgen and was still measured.
    assert!(
        floors.startup.first_200_us.is_some(),
        "{:?}",
        floors.startup
    );
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(
        md.contains(&format!("Machine floor not measured: {why}")),
        "results.md says why:\n{md}"
    );
    // Every cell ran; open-loop repetitions have no floor check rather than a made-up one.
    let mut open = 0;
    for e in std::fs::read_dir(run_dir.join("cells")).unwrap().flatten() {
        let c: CellResult = read(&e.path());
        assert_eq!(c.status, CellStatus::Ok, "{}: {:?}", c.cell.key, c.status);
        assert!(!c.reps.is_empty());
        if c.cell.key.contains("open") {
            open += 1;
            assert!(
                c.reps.iter().all(|r| r.floor_check.is_none()),
                "{}",
                c.cell.key
            );
        }
    }
    assert_eq!(open, 1);
}
