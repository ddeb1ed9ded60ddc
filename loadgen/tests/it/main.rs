//! loadgen's integration tests, one binary: the CLI contract, exact accounting, faults,
//! hostile servers, the machine floor and the report schema, all on one support kit.

mod cli;
mod counts;
mod faults;
mod floor;
mod hostile;
mod schema;
mod support;
