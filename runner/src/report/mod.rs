//! Presenting one run: SVG charts, the plots section of results.md and the README's headline
//! section, all returned as text; `cmd::report` writes them.

pub mod bars;
pub mod charts;
pub mod data;
pub mod headline;
pub mod open_loop;
pub mod palette;
pub mod plots_md;
pub mod runs;
pub mod spectrum;
pub mod style;
pub mod throughput;
