//! The run directory: `results/<run-id>/{run.json, cells/<key>.json, results.json,
//! results.md}`, with run ids and a new run's record. Every write goes to a temp file of its
//! own then renames, so a crash never leaves a half-written file and two writers never share
//! a temp file; a run directory is locked while one process writes it ([`RunLock`]).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;

use sha2::{Digest, Sha256};

use super::schema::{
    CellResult, CellSpec, CellStatus, Environment, ResultsFile, RunRecord, RunStatus,
    SCHEMA_VERSION,
};

/// UTC timestamp for run ids: 2026-11-30T13-05-00Z.
pub fn utc_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A run id: the start time in UTC, then `suffix` (the commit, or "k8s").
pub fn run_id(started_unix_ms: u64, suffix: &str) -> String {
    format!("{}-{suffix}", utc_stamp(started_unix_ms / 1000))
}

impl RunRecord {
    /// The record of a run starting now, still running: the matrix file as given (hashed),
    /// the plan and the environment; the rest is the run's to fill.
    pub fn new(
        run_id: String,
        started_unix_ms: u64,
        config_path: String,
        config_toml: String,
        plan: Vec<CellSpec>,
        environment: Environment,
    ) -> RunRecord {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            run_id,
            started_unix_ms,
            finished_unix_ms: None,
            status: RunStatus::Running,
            command_line: std::env::args().collect(),
            quick: false,
            replay_of: None,
            target_ci_pct: None,
            calibration_only: false,
            only: vec![],
            config_path,
            config_sha256: format!("{:x}", Sha256::digest(config_toml.as_bytes())),
            config_toml,
            plan,
            not_applicable: Vec::new(),
            estimated_duration_s: 0.0,
            environment,
            floors: None,
            flamegraph: None,
            hosts: vec![],
        }
    }
}

/// A run directory that one process writes: a new run, a resumed one, or `matrix report`.
pub struct Store {
    pub dir: PathBuf,
    _lock: RunLock,
}

/// A file could not be written (disk full, permissions, …): an I/O failure, not bad input.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {source}", .path.display())]
pub struct WriteFailed {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// A temp file name beside `path` that no other writer uses: `.<name>.<pid>.<n>.tmp`.
fn temp_beside(path: &Path) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// `bytes` into `path` through a temp file of its own in the same directory, renamed over
/// it; on failure the temp file is removed and the error is a [`WriteFailed`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_verified(path, bytes, |_| Ok(()))
}

/// [`write_atomic`], renamed over `path` only once `verify` has read the temp file back: a
/// file that cannot be read back (a number serialized as `null`) never replaces a good one.
pub fn write_verified(
    path: &Path,
    bytes: &[u8],
    verify: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let tmp = temp_beside(path);
    let failed = |source| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::Error::from(WriteFailed {
            path: path.to_path_buf(),
            source,
        })
    };
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()
    })();
    written.map_err(failed)?;
    if let Err(e) = verify(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.context(format!(
            "{} left as it was: what would replace it does not read back",
            path.display()
        )));
    }
    std::fs::rename(&tmp, path).map_err(failed)
}

/// results.json's bytes: pretty, newline-terminated, as every results.json has been.
pub fn results_bytes(r: &ResultsFile) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(r).unwrap_or_default();
    b.push(b'\n');
    b
}

/// results.json into `path`, renamed over the old one only when it reads back as a result
/// set's results.json does (every number finite and in range, every key a key).
pub fn write_results(path: &Path, results: &ResultsFile) -> anyhow::Result<()> {
    let bytes = results_bytes(results);
    write_verified(path, &bytes, |tmp| {
        let back: ResultsFile = super::untrusted::read_json(tmp)?;
        super::untrusted::check_results(&back)
    })
}

/// The lock on a run directory while one process writes it (an advisory `flock` on the
/// directory itself, so no lock file is left in it; released when the process ends,
/// however it ends). A second run, `--resume` or `matrix report` of the same directory is
/// refused instead of writing over the first.
#[derive(Debug)]
pub struct RunLock(#[allow(dead_code)] std::fs::File);

impl RunLock {
    pub fn acquire(dir: &Path) -> anyhow::Result<RunLock> {
        let f = std::fs::File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
        match f.try_lock() {
            Ok(()) => Ok(RunLock(f)),
            Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
                "{}: another matrix process (a run, --resume or report) is writing this run \
                 directory; wait for it to end",
                dir.display()
            ),
            // A file system without locks: nothing to hold, as before locks existed.
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
                Ok(RunLock(f))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(e).with_context(|| format!("locking {}", dir.display()))
            }
        }
    }
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// How many `-2`, `-3` … suffixes a new run id may try before giving up.
const MAX_ID_SUFFIX: u32 = 1000;

impl Store {
    /// A new run directory `parent/<id>` that did not exist before; when it does (two runs
    /// started in the same second from the same commit), `<id>-2`, `<id>-3` … Creation is
    /// atomic (`mkdir`), so two runners racing can never share a directory. Returns the
    /// store and the id it got.
    pub fn create_new(parent: &Path, id: &str) -> anyhow::Result<(Store, String)> {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        for n in 1..=MAX_ID_SUFFIX {
            let id = if n == 1 {
                id.to_string()
            } else {
                format!("{id}-{n}")
            };
            let dir = parent.join(&id);
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok((Store::create(dir)?, id)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("creating {}", dir.display()));
                }
            }
        }
        anyhow::bail!(
            "{}: {MAX_ID_SUFFIX} run directories named {id}[-n] exist already",
            parent.display()
        )
    }

    /// The directory and its `cells/`, existing or not (a resumed run reopens its own),
    /// locked for this process.
    pub fn create(dir: PathBuf) -> anyhow::Result<Store> {
        std::fs::create_dir_all(dir.join("cells"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let lock = RunLock::acquire(&dir)?;
        Ok(Store { dir, _lock: lock })
    }

    pub fn open(dir: &Path) -> anyhow::Result<Store> {
        anyhow::ensure!(
            dir.join("run.json").exists(),
            "{} holds no run.json: not a run directory",
            dir.display()
        );
        Store::create(dir.to_path_buf())
    }

    fn json(&self, name: &Path, v: &impl Serialize) -> anyhow::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(v)?;
        bytes.push(b'\n');
        write_atomic(name, &bytes)
    }

    pub fn write_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        self.json(&self.dir.join("run.json"), run)
    }

    pub fn read_run(&self) -> anyhow::Result<RunRecord> {
        read_json(&self.dir.join("run.json"))
    }

    pub fn cell_path(&self, key: &str) -> PathBuf {
        self.dir.join("cells").join(format!("{key}.json"))
    }

    pub fn write_cell(&self, cell: &CellResult) -> anyhow::Result<()> {
        self.json(&self.cell_path(&cell.cell.key), cell)
    }

    pub fn read_cell(&self, key: &str) -> Option<CellResult> {
        read_json(&self.cell_path(key)).ok()
    }

    /// A cell counts as done (skipped by --resume) once it reached a final status.
    pub fn cell_done(&self, key: &str) -> bool {
        self.read_cell(key).is_some_and(|c| finished(&c))
    }

    pub fn write_results(&self, results: &ResultsFile) -> anyhow::Result<()> {
        write_results(&self.dir.join("results.json"), results)
    }

    pub fn write_file(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        write_atomic(&self.dir.join(name), bytes)
    }

    pub fn tmp_dir(&self) -> anyhow::Result<PathBuf> {
        let d = self.dir.join(".tmp");
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }
}

/// Whether `--resume` leaves the cell as it is: a final status, except a failure that was
/// a host's or its connection's rather than the service's (the host may be back).
pub fn finished(c: &CellResult) -> bool {
    match c.status {
        CellStatus::Ok | CellStatus::Unsupported => true,
        CellStatus::Failed => !c.failure.as_ref().is_some_and(|f| f.host_lost),
        CellStatus::Partial | CellStatus::Interrupted => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamp_known_dates() {
        assert_eq!(utc_stamp(0), "1970-01-01T00-00-00Z");
        // 2026-11-30T13:05:00Z
        assert_eq!(utc_stamp(1_796_043_900), "2026-11-30T13-05-00Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00-00-00Z");
    }

    /// results.json and results.md used to share `results.tmp`: two writers at once left
    /// Markdown in results.json.
    #[test]
    fn two_files_written_at_once_never_share_a_temp_file() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (json, md) = (dir.join("results.json"), dir.join("results.md"));
        assert_ne!(temp_beside(&json), temp_beside(&md));
        assert_ne!(temp_beside(&json), temp_beside(&json));
        std::thread::scope(|s| {
            for (path, text) in [(&json, "{}\n"), (&md, "# md\n")] {
                s.spawn(move || {
                    for _ in 0..200 {
                        write_atomic(path, text.as_bytes()).unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "{}\n");
        assert_eq!(std::fs::read_to_string(&md).unwrap(), "# md\n");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "a temp file was left"
        );
        // A failed write leaves no temp file and is a WriteFailed.
        std::fs::create_dir_all(dir.join("taken/x")).unwrap();
        let e = write_atomic(&dir.join("taken"), b"x").unwrap_err();
        assert!(e.is::<WriteFailed>(), "{e:#}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
        // A second lock on a locked run directory is refused.
        let held = RunLock::acquire(&dir).unwrap();
        let second = RunLock::acquire(&dir).unwrap_err().to_string();
        assert!(second.contains("another matrix process"), "{second}");
        drop(held);
        RunLock::acquire(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A results.json holding a number that serializes as `null` (an infinite sum) used to
    /// replace the good one, and nothing could read the run after.
    #[test]
    fn a_results_file_that_does_not_read_back_never_replaces_the_old_one() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-verify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        let mut r = crate::export::json::results_file("r", RunStatus::Completed, vec![], None);
        write_results(&path, &r).unwrap();
        let good = std::fs::read(&path).unwrap();
        r.drift = Some(super::super::schema::Drift {
            key: "k".into(),
            first_requests_per_s: Some(1.0),
            rerun_requests_per_s: Some(f64::INFINITY),
            requests_per_s_drift_pct: Some(1e300),
            first_cpu_us_per_request: None,
            rerun_cpu_us_per_request: None,
            cpu_us_per_request_drift_pct: None,
            note: String::new(),
            series: vec![],
            max_requests_per_s_drift_pct: None,
            max_cpu_us_per_request_drift_pct: None,
        });
        let e = format!("{:#}", write_results(&path, &r).unwrap_err());
        assert!(
            e.contains("left as it was") && e.contains("out of range"),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), good);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "a temp file was left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_run_never_reuses_an_existing_directory() {
        let parent = std::env::temp_dir().join(format!("pingmatrix-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&parent);
        let (a, id_a) = Store::create_new(&parent, "2026-11-30T14-06-29Z-14f462b").unwrap();
        std::fs::write(a.dir.join("run.json"), "{}").unwrap();
        let (b, id_b) = Store::create_new(&parent, "2026-11-30T14-06-29Z-14f462b").unwrap();
        let (_, id_c) = Store::create_new(&parent, "2026-11-30T14-06-29Z-14f462b").unwrap();
        assert_eq!(id_a, "2026-11-30T14-06-29Z-14f462b");
        assert_eq!(id_b, "2026-11-30T14-06-29Z-14f462b-2");
        assert_eq!(id_c, "2026-11-30T14-06-29Z-14f462b-3");
        assert_ne!(a.dir, b.dir);
        assert!(b.dir.join("cells").is_dir());
        assert_eq!(
            std::fs::read_to_string(a.dir.join("run.json")).unwrap(),
            "{}"
        );
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
