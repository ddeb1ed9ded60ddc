//! One service instance's life: spawn (confined, own process group) → first 200 →
//! start-up line → verification → stop with the port checked free. `session` strings the
//! steps together the one way every repetition path runs them.

pub mod external;
pub mod http;
pub mod session;
pub mod spawn;
pub mod startup;
pub mod startup_line;
pub mod stop;
pub mod tls;
pub mod verify;
pub mod warm;
