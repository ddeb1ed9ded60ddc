//! run.json's record of each service variant (`variant` builds them): what source
//! and which dependency versions the binary was built from, how, and its sha256 — or why it
//! could not be built.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRecord {
    /// The service name cells use: `<service>@<variant>`.
    pub service: String,
    /// The `[[services]]` entry it is a variant of.
    pub base: String,
    pub variant: String,
    /// `rev` as written in the matrix file ("HEAD" when none was given).
    pub rev: String,
    /// The commit it resolved to.
    pub commit: String,
    /// Which pingmatrix checkout it was built from: "the matrix file's checkout", "the
    /// checkout matrix was built in", or `repo = "…"` as the matrix file wrote it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_repo: String,
    /// `pin`: crate → the version asked for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pins: BTreeMap<String, String>,
    /// `patch`: crate → the source it was taken from (`[patch.crates-io]` in the tree).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub patches: BTreeMap<String, PatchRecord>,
    /// Resolved versions of the runtime crates, read from the variant's own Cargo.lock
    /// (a crate locked at two versions lists both).
    pub resolved: BTreeMap<String, Vec<String>>,
    /// The sha256 of the variant's Cargo.lock.
    pub cargo_lock_sha256: String,
    /// The content hash the build is cached under (`target/variants/<hash>/`).
    pub cache_key: String,
    /// The command that built it, run in the variant's source tree.
    pub build_command: String,
    /// Whether this run built it or found it cached.
    pub cached: bool,
    /// The binary's path and sha256 (None when the build failed).
    pub binary: Option<String>,
    pub binary_sha256: Option<String>,
    /// Why the build failed (the tail of cargo's output); its cells fail with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a patched crate came from and what content that was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// "path" or "git".
    pub source: String,
    /// The path as written in the matrix file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The git URL as written in the matrix file, and its revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// The commit built: a git source's revision resolved; a path's repository's HEAD
    /// (None: the path is in no git repository).
    pub commit: Option<String>,
    /// A path in a git repository: whether its files differ from that commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<bool>,
    /// A path: the sha256 of its files (names and contents), which the cache key includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
}
