//! The subcommands, one file each: they compose the library layers (config → plan → run →
//! results → export/report/compare) and decide what is written where and the exit status.
//! Nothing below imports from here.

pub mod compare;
pub mod diff_flamegraph;
pub mod k8s;
pub mod plan;
pub mod report;
pub mod run;
pub mod site;
pub mod variants;
pub mod which;
