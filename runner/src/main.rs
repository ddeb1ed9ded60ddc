//! `matrix`: runs every service × scenario × load level × resource profile and leaves a
//! result set that explains itself.

fn main() {}
