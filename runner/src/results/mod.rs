//! Result files: the schema (read back by compare/report) and the directory store.

pub mod schema;
