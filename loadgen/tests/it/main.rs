//! loadgen's integration tests, one binary: the CLI contract, exact accounting, faults,
//! hostile servers, the machine floor, h2c and TLS against servers it did not write, and the
//! report schema, all on one support kit.

mod cli;
mod counts;
mod faults;
mod floor;
mod h2c;
mod hostile;
mod schema;
mod support;
mod tls;
