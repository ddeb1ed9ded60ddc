//! The start of a run: a new run directory with its run.json (the environment, the floors,
//! the matrix file), or the directory an interrupted run left, reopened with the matrix,
//! plan and binaries it started with (`--resume`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::binaries::{display_path, exe_dir};
use crate::cli::RunArgs;
use crate::config::{self, Matrix};
use crate::floor;
use crate::plan::{self, Calibrate, Options, Plan};
use crate::results::schema::{Floors, RunRecord};
use crate::results::store::{self, Store};
use crate::sample::now_unix_us;

/// A new run: cargo builds what the matrix file names (under `cargo run`), the file is
/// loaded and expanded, its variants built, and the run directory made.
pub fn new(
    args: &RunArgs,
    calibrate: Calibrate,
) -> anyhow::Result<(Store, RunRecord, Matrix, Plan)> {
    crate::siblings::build_for(&args.select.config, args.quiet)?;
    let mut m = config::load(&args.select.config, exe_dir().as_deref())?;
    let opts = Options {
        calibration: calibrate,
        ..args.select.plan_options()
    };
    let plan = plan::expand(&m, &opts)?;
    // A replay's cells are checked against this matrix before anything builds or is written.
    let replay_of = match args.fake_reps.as_deref() {
        Some(file) if file.is_file() => {
            crate::rep::authored::Authored::open(file)?;
            Some(crate::rep::authored::AUTHORED.to_owned())
        }
        Some(dir) => Some(crate::rep::check_replay(dir, &plan)?),
        None => None,
    };
    let quiet = args.quiet;
    let variants = crate::variant::prepare(&mut m, &plan_services(&plan), &mut |n| {
        if !quiet {
            eprintln!("{n}");
        }
    })?;
    let (store, run) = start_run(args, &m, &plan, variants, replay_of)?;
    Ok((store, run, m, plan))
}

fn binaries(m: &Matrix) -> BTreeMap<String, String> {
    let mut b: BTreeMap<String, String> = m
        .services
        .iter()
        .map(|s| (s.name.clone(), display_path(&s.binary)))
        .collect();
    b.insert("loadgen".into(), display_path(&m.loadgen));
    if let Ok(me) = std::env::current_exe() {
        b.insert("matrix".into(), display_path(&me));
    }
    b
}

/// The services not built from this checkout: variants (their own commit) and `command`
/// services (no stamp to check).
fn origins(m: &Matrix) -> BTreeMap<String, crate::env::provenance::Origin> {
    use crate::env::provenance::Origin;
    m.services
        .iter()
        .filter_map(|s| {
            let origin = match &s.variant {
                _ if s.external => Origin::Foreign,
                Some(v) => Origin::Commit(v.commit.clone()),
                None => return None,
            };
            Some((s.name.clone(), origin))
        })
        .collect()
}

/// The services the plan starts (variants not in it are not built).
fn plan_services(plan: &Plan) -> std::collections::BTreeSet<String> {
    plan.all_cells().map(|c| c.service.clone()).collect()
}

fn start_run(
    args: &RunArgs,
    m: &Matrix,
    plan: &Plan,
    variants: Vec<crate::results::variants::VariantRecord>,
    replay_of: Option<String>,
) -> anyhow::Result<(Store, RunRecord)> {
    let mut env = crate::env::collect(&args.select.config, &m.loadgen, binaries(m), &origins(m));
    env.variants = variants;
    if let Some(from) = &args.fake_reps {
        let how = if replay_of.as_deref() == Some(crate::rep::authored::AUTHORED) {
            "authored by"
        } else {
            "replayed from"
        };
        env.provenance_warnings.insert(
            0,
            format!(
                "--fake-reps: every repetition was {how} {}; nothing was measured in this run",
                from.display()
            ),
        );
    }
    let now_ms = now_unix_us() / 1000;
    let short = env
        .source
        .git_commit
        .as_deref()
        .map_or("nogit".to_string(), |c| c[..c.len().min(7)].to_string());
    let (store, run_id) = Store::create_new(&args.out, &store::run_id(now_ms, &short))?;
    let run = RunRecord {
        quick: args.select.quick,
        replay_of,
        target_ci_pct: args.select.target_ci,
        calibration_only: plan.groups.is_empty(),
        not_applicable: plan.not_applicable.clone(),
        only: args.select.only.clone(),
        estimated_duration_s: plan.estimate_s(),
        // A replay measures nothing, its floors neither.
        floors: args.fake_reps.is_none().then(|| Floors {
            startup: floor::startup(exe_dir().as_deref(), plan.cells().next().map(|c| &c.limits)),
            machine: Some(floor::machine(
                &m.loadgen,
                &plan.cells().collect::<Vec<_>>(),
            )),
        }),
        ..RunRecord::new(
            run_id,
            now_ms,
            args.select.config.display().to_string(),
            m.text.clone(),
            plan.all_cells().cloned().collect(),
            env,
        )
    };
    store.write_run(&run)?;
    // The matrix file once more as a plain file, for `diff` and re-runs.
    store.write_file("matrix.toml", m.text.as_bytes())?;
    Ok((store, run))
}

/// Re-validates the matrix recorded in an interrupted run, reopens its directory and
/// expands the same plan again.
pub fn resume(dir: &Path) -> anyhow::Result<(Store, RunRecord, Matrix, Plan)> {
    let store = Store::open(dir)?;
    let run = store.read_run()?;
    let mut m = recorded_matrix(&run, exe_dir().as_deref())?;
    let opts = Options {
        quick: run.quick,
        only: run.only.clone(),
        target_ci_pct: run.target_ci_pct,
        calibration: if run.calibration_only {
            Calibrate::Only
        } else {
            Calibrate::AsConfigured
        },
        // For the estimate only: the count itself follows `--count-instructions` as given.
        count_instructions: run.command_line.iter().any(|a| a == "--count-instructions"),
    };
    let plan = plan::expand(&m, &opts)?;
    // The builds are cached by content, so this finds the binaries the run started with.
    crate::variant::prepare(&mut m, &plan_services(&plan), &mut |n| eprintln!("{n}"))?;
    check_same_binaries(&run, &m, &plan)?;
    Ok((store, run, m, plan))
}

/// The matrix a run recorded, as a resume runs it: its file validated again, and every
/// variant at the commit the run started with — a `rev` (say HEAD) may name another by now.
fn recorded_matrix(run: &RunRecord, exe_dir: Option<&Path>) -> anyhow::Result<Matrix> {
    let path = PathBuf::from(&run.config_path);
    let mut m = config::validate::parse(&path, &run.config_toml, exe_dir)?;
    pin_recorded_commits(&mut m, &run.environment.variants);
    Ok(m)
}

/// Points every variant at the commit `recorded` (run.json) says it resolved to when the run
/// started.
fn pin_recorded_commits(m: &mut Matrix, recorded: &[crate::results::variants::VariantRecord]) {
    for s in &mut m.services {
        if let Some(v) = s.variant.as_mut()
            && let Some(r) = recorded.iter().find(|r| r.service == s.name)
        {
            v.commit.clone_from(&r.commit);
        }
    }
}

/// A resumed run measures the programs it started with: every binary the rest of the plan
/// runs (its services and loadgen) must have the sha256 run.json recorded for it, or one
/// service name would stand for two programs. Err (exit 2) names each that changed.
fn check_same_binaries(run: &RunRecord, m: &Matrix, plan: &Plan) -> anyhow::Result<()> {
    let mut used = plan_services(plan);
    used.insert("loadgen".into());
    let now = crate::env::provenance::binary_builds(
        &binaries(m)
            .into_iter()
            .filter(|(name, _)| used.contains(name))
            .collect(),
    );
    let changed = changed_binaries(&run.environment.binary_builds, &now);
    anyhow::ensure!(
        changed.is_empty(),
        "cannot resume {}: {}; resuming would measure one name with two programs (put the \
         recorded binaries back, or start a new run)",
        run.run_id,
        changed.join("; ")
    );
    Ok(())
}

/// The binaries in `now` whose sha256 differs from the one `recorded` (run.json) holds for
/// the same name, each as "NAME: PATH has sha256 X…, run.json records Y…". A name recorded
/// without a hash (unreadable then) is not compared.
fn changed_binaries(
    recorded: &BTreeMap<String, crate::results::schema::BinaryBuild>,
    now: &BTreeMap<String, crate::results::schema::BinaryBuild>,
) -> Vec<String> {
    let short = |h: &str| h[..h.len().min(12)].to_string();
    now.iter()
        .filter_map(|(name, b)| {
            let want = recorded.get(name)?.sha256.as_deref()?;
            match b.sha256.as_deref() {
                Some(h) if h == want => None,
                Some(h) => Some(format!(
                    "{name}: {} has sha256 {}…, run.json records {}…",
                    b.path,
                    short(h),
                    short(want)
                )),
                None => Some(format!(
                    "{name}: {} cannot be read (run.json records sha256 {}…)",
                    b.path,
                    short(want)
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::BinaryBuild;

    fn build(path: &str, sha: Option<&str>) -> BinaryBuild {
        BinaryBuild {
            path: path.into(),
            sha256: sha.map(String::from),
            build_commit: None,
            build_dirty: None,
        }
    }

    #[test]
    fn a_binary_whose_hash_differs_from_run_json_is_named() {
        let recorded = BTreeMap::from([
            ("a".to_string(), build("a", Some("aaaa"))),
            ("b".to_string(), build("b", Some("bbbb"))),
            ("c".to_string(), build("c", Some("cccc"))),
            ("d".to_string(), build("d", None)),
        ]);
        let now = BTreeMap::from([
            ("a".to_string(), build("bin/a", Some("aaaa"))),
            ("b".to_string(), build("bin/b", Some("b222"))),
            ("c".to_string(), build("bin/c", None)),
            ("d".to_string(), build("bin/d", Some("dddd"))),
            ("new".to_string(), build("bin/new", Some("eeee"))),
        ]);
        assert_eq!(
            changed_binaries(&recorded, &now),
            [
                "b: bin/b has sha256 b222…, run.json records bbbb…",
                "c: bin/c cannot be read (run.json records sha256 cccc…)",
            ]
        );
    }

    #[test]
    fn a_resumed_variant_runs_the_commit_run_json_recorded() {
        // The run's matrix file, recorded in run.json: a variant at `rev = HEAD`, which the
        // checkout's HEAD resolves to today.
        let text = r#"
[defaults]
loadgen = "/bin/true"

[[services]]
name = "svc"
binary = "/bin/true"

[[services.variants]]
name = "v"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [1] }

[[profiles]]
name = "p"
server_cpus = "0"
loadgen_cpus = "0"
"#;
        let Ok(now) = config::validate::parse(Path::new("m.toml"), text, None) else {
            eprintln!("SKIPPED: a variant's rev needs a git checkout (a Nix build has none)");
            return;
        };
        let head = now.services[1].variant.as_ref().unwrap().commit.clone();
        // run.json says the run started at another commit (HEAD has moved on since).
        let started = "1".repeat(40);
        assert_ne!(head, started);
        let mut env = crate::env::collect(
            Path::new("m.toml"),
            Path::new("/bin/true"),
            BTreeMap::new(),
            &BTreeMap::new(),
        );
        env.variants = vec![crate::results::variants::VariantRecord {
            service: "svc@v".into(),
            base: "svc".into(),
            variant: "v".into(),
            rev: "HEAD".into(),
            commit: started.clone(),
            source_repo: String::new(),
            pins: Default::default(),
            patches: Default::default(),
            resolved: Default::default(),
            cargo_lock_sha256: "00".into(),
            cache_key: "k".into(),
            build_command: "cargo build".into(),
            cached: false,
            binary: None,
            binary_sha256: None,
            error: None,
        }];
        let run = RunRecord::new("r".into(), 0, "m.toml".into(), text.into(), vec![], env);
        let m = recorded_matrix(&run, None).unwrap();
        assert_eq!(m.services[1].variant.as_ref().unwrap().commit, started);
        assert!(m.services[0].variant.is_none());
    }
}
