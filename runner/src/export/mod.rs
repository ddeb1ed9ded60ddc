//! Exporters: results as bytes (JSON aggregate, Markdown table). They never touch files;
//! the store writes what they return.

pub mod json;
pub mod markdown;
