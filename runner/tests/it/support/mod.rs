//! The one support kit of runner's integration tests: `live` for the tests that start the
//! real binaries (finding them, scratch directories, tiny matrix files), `fixtures` for the
//! synthetic result sets of the compare, report and regenerate tests.

pub mod fixtures;
pub mod live;
