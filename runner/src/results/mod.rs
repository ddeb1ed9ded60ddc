//! The data layer every reader and writer of results uses: the on-disk schema, the run
//! directory store, loading a finished result set, the statistics and suspect rules a cell is
//! summarised with, grouping of cells for tables and charts, and value formatting with units.
//! It imports nothing from the layers that produce or present results.

pub mod churn;
pub mod group;
pub mod merge;
pub mod schema;
pub mod set;
pub mod stats;
pub mod store;
pub mod summary;
pub mod suspect;
pub mod units;
