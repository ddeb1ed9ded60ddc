//! Exporters: a run's results as bytes — results.json (the aggregate), results.md (the
//! page a human reads, put together once in `page`) and the HTML viewer (`html`: the run's
//! page and the site), and the summary a run ends with (`summary`). They never touch files; the store, `cmd::report` or `cmd::site`
//! writes them.

pub mod attribution;
pub mod churn;
pub mod counted;
pub mod flamegraphs;
pub mod hosts;
pub mod html;
pub mod json;
pub mod markdown;
pub mod page;
pub mod profiles;
pub mod summary;
pub mod variants;
pub mod verdicts;
