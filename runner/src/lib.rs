//! The matrix runner as a library: `main.rs` is only the table of contents.
//!
//! Reading order — data flows one way, config → plan → run → results → export/report:
//! - `config` (matrix.toml, validated) → `plan` (expanded cells, groups, estimate);
//! - `cmd` — the subcommands, wiring only: `cmd::run`, `cmd::report`, `cmd::compare`,
//!   `cmd::plan`, `cmd::site`, `cmd::k8s`, `cmd::variants`, `cmd::which`,
//!   `cmd::diff_flamegraph`;
//! - `start` — the start of a run (a new run directory and run.json, or the run to resume,
//!   checked for the same matrix and binaries); `schedule` — the policy of a run (groups,
//!   interleaved repetitions, adaptive stops, drift re-runs, profiled repetitions, resume)
//!   over a repetition runner (`rep`: `cell` and `flamegraph` behind one trait), and the one
//!   writer of a cell: a runner returns each repetition as a value (`RepOutcome`) that the
//!   schedule records; `finish` — the end of a run (results.json, results.md, run.json);
//! - `cell` — one repetition: `limits` (cgroups, CPU lists) → `service` (spawn, first 200,
//!   start-up line, verify, stop) → `load` (loadgen as a child) watched by `observe` (one
//!   set of observers, each with its phases and its part of the observation: the process
//!   tree's /proc poller, the cgroup's counters, the generator's /proc counts, a profiler,
//!   the syscall window after the load, the floor check, Valgrind after the stop — conducted
//!   the same way on a server host's `agent` and for a multi-host cell);
//!   a churn cell runs `churn` (the runner's own open/close rounds, RSS after each) instead;
//! - `results` — the data layer every reader uses: schema, store, summary, suspect rules,
//!   stats, loading a result set, grouping, units;
//! - `export` (results.json, results.md, a run's page), `report` (charts, README headline)
//!   and `compare` (two runs) — each reads `results` and none imports another; `site`
//!   (`matrix site`: every run's page, any two compared, a history per cell) sits above them
//!   and reads `export` and `compare`;
//! - `count` — what a repetition counts beside its timed window: syscalls (perf), /proc
//!   counters, instructions (Valgrind or hardware counters);
//! - beside them: `floor` (the harness's own floors, measured as a run starts), `env` (the
//!   run's environment record), `process`, `binaries`, `interrupt`,
//!   `progress`, `readme` (a generated section of a Markdown file), `cli` (arguments),
//!   `catalogue` (the project's services, model and I/O driver: services/services.toml),
//!   `siblings` (under `cargo run --release`, cargo builds the binaries a run needs first),
//!   `cargo` (a Cargo.toml's package name, the versions a Cargo.lock links into a package).
//! - `host` (the runner's side of server and generators on other machines: SSH, shipping
//!   binaries, one multi-host repetition) and `agent` (`matrix agent`, its other side on
//!   each host); `cell` hands a multi-host cell to `host::rep`. `k8s`: manifests per cell
//!   and ingesting the Jobs' reports (no cluster needed).
//! - `variant`: service variants (another revision, pinned dependency versions) built and
//!   cached before the run, run as `<service>@<variant>` services.
//! - `profile` (perf → folded stacks → SVG, self-contained) and `flamegraph`, its glue for
//!   `matrix run --flamegraph` (one extra, profiled repetition per cell, beside `cell`).
//!
//! Lower layers never import upper ones: `results`, `env`, `limits`, `process` and `cargo`
//! import nothing from config, plan, cell, schedule, cmd, export, report, compare or site; no
//! module but `main` imports `cmd`; and no two top-level modules import each other, however
//! indirectly. `tests/it/layering.rs` holds all three.

pub mod agent;
pub mod binaries;
pub mod cargo;
pub mod catalogue;
pub mod cell;
pub mod churn;
pub mod cli;
pub mod cmd;
pub mod compare;
pub mod config;
pub mod count;
pub mod env;
pub mod export;
pub mod finish;
pub mod flamegraph;
pub mod floor;
pub mod host;
pub mod interrupt;
pub mod k8s;
pub mod limits;
pub mod load;
pub mod observe;
pub mod plan;
pub mod process;
pub mod profile;
pub mod progress;
pub mod readme;
pub mod rep;
pub mod report;
pub mod results;
pub mod sample;
pub mod schedule;
pub mod service;
pub mod siblings;
pub mod site;
pub mod start;
pub mod variant;
