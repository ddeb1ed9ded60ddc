//! The matrix runner as a library: `main.rs` is only the table of contents.
//!
//! Reading order: `config` (matrix.toml) → `plan` (expanded cells) → `run` (groups,
//! interleaving, drift) → `cell` (one repetition: `limits`, `service`, `load`, `sample`) →
//! `flags` + `results` (schema, summary, store) → `export` (JSON, Markdown) and `env`.

pub mod binaries;
pub mod cell;
pub mod cli;
pub mod compare;
pub mod config;
pub mod env;
pub mod export;
pub mod flags;
pub mod interrupt;
pub mod limits;
pub mod load;
pub mod plan;
pub mod process;
pub mod profile;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod sample;
pub mod service;
pub mod stats;
