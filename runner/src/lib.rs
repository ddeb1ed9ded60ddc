//! The matrix runner as a library: `main.rs` is only the table of contents.
//!
//! Reading order: `config` (matrix.toml) → `plan` (expanded cells) → `cell` (one cell's
//! life: limits, service, load, samples) → `results` (schema + store) → `export`.

pub mod results;
pub mod stats;
