//! One service instance's life: spawn (confined, own process group) → first 200 →
//! banner → verification → stop with the port checked free.

pub mod banner;
pub mod http;
pub mod spawn;
pub mod startup;
pub mod stop;
pub mod verify;
