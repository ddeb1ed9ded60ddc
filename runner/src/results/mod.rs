//! Result files: the schema (read back by compare/report), the per-cell summary and the
//! run directory store.

pub mod schema;
pub mod store;
pub mod summary;
