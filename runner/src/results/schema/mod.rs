//! The on-disk result schema: every type `matrix run` writes (run.json, cells/<key>.json,
//! results.json), in one module so `matrix compare` / `matrix report` can read them back.
//! Records only, at the bottom of the data layer: `run` (run.json), `cell` (the expanded
//! plan and cells/<key>.json), `results` (results.json) and `analysis` (the records of the
//! analyses: statistics, adaptive stops, churn, differences, calibration, verdicts). Their
//! computations live in the modules above and import these types, never the other way round.
//!
//! Rules: units in field names, `Option` for "not measured" (never a fake zero), and every
//! type derives `Deserialize`. Bump `SCHEMA_VERSION` on any incompatible change.

mod analysis;
mod cell;
mod counted;
mod profile;
mod results;
mod run;

pub use analysis::*;
pub use cell::*;
pub use counted::*;
pub use profile::*;
pub use results::*;
pub use run::*;

/// Version of run.json, cell files and results.json.
pub const SCHEMA_VERSION: u32 = 1;
