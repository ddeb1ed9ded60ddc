//! Exporters: a run's results as bytes — results.json (the aggregate) and results.md (the
//! page a human reads). They never touch files; the store or `cmd::report` writes them.

pub mod churn;
pub mod counted;
pub mod flamegraphs;
pub mod hosts;
pub mod json;
pub mod markdown;
pub mod variants;
pub mod verdicts;
