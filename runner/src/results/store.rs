//! The run directory: `results/<run-id>/{run.json, cells/<key>.json, results.json,
//! results.md}`. Every write goes to a temp file then renames, so a crash never leaves a
//! half-written file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::schema::{CellResult, CellStatus, RunRecord};

pub struct Store {
    pub dir: PathBuf,
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

impl Store {
    pub fn create(dir: PathBuf) -> anyhow::Result<Store> {
        std::fs::create_dir_all(dir.join("cells"))
            .with_context(|| format!("creating {}", dir.display()))?;
        Ok(Store { dir })
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
        self.read_cell(key).is_some_and(|c| {
            matches!(
                c.status,
                CellStatus::Ok | CellStatus::Failed | CellStatus::Unsupported
            )
        })
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
