//! Exporters: a run's results as bytes — results.json (the aggregate) and results.md (the
//! page a human reads, put together once in `page`). They never touch files; the store or
//! `cmd::report` writes them.

pub mod churn;
pub mod flamegraphs;
pub mod hosts;
pub mod json;
pub mod markdown;
pub mod page;
pub mod verdicts;
