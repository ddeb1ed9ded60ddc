//! The data layer every reader and writer of results uses: the on-disk schema, the run
//! directory store, loading a finished result set, the statistics and suspect rules a cell is
//! summarised with, the metrics and the statistics of a difference between two samples (with
//! their power), grouping of cells for tables and charts, and value formatting with units.
//! It imports nothing from the layers that produce or present results.

pub mod adaptive;
pub mod answers;
pub mod attribution;
pub mod bands;
pub mod calibration;
pub mod churn;
pub mod counted;
pub mod counted_rank;
pub mod difference;
#[cfg(test)]
pub(crate) mod fixture;
pub mod group;
pub mod measured;
pub mod metric;
pub mod outcome;
pub mod power;
pub mod schema;
pub mod set;
pub mod stats;
pub mod store;
pub mod summary;
pub mod suspect;
pub mod trust;
pub mod units;
pub mod untrusted;
pub mod variants;
pub mod verdict;
