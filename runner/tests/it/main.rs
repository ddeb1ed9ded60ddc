//! runner's integration tests, one binary (one link of the crate and its dependencies): the
//! matrix file, end-to-end runs of the real binaries, compare/report/regenerate on synthetic
//! and committed result sets, multi-host and Kubernetes paths, all on one support kit.

mod anywhere;
mod byo;
mod cache;
mod churn;
mod compare;
mod config;
mod e2e;
mod flamegraph;
mod floors;
mod h2c;
mod hardware;
mod headers;
mod hosts;
mod k8s;
mod kernel;
mod layering;
mod method;
mod one_number;
mod patch;
mod regenerate;
mod replay;
mod report;
mod sensitivity;
mod startup_clock;
mod support;
mod tls;
mod trees;
mod unmeasured;
mod untrusted;
