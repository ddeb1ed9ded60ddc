//! Which I/O backend a run uses, and why: `--io` against what this process may use. The
//! open loop always runs on epoll (its sender sleeps on `clock_nanosleep` between sends and
//! reads stamped arrivals; io_uring would change none of that); the closed loop runs on
//! io_uring where the kernel allows it.

use crate::report::{IoBackend, IoUsed};
use crate::spec::{IoChoice, LoadModel, LoadSpec, SpecError};
use crate::sys::uring;

/// The backend for `spec`; `--io uring` where io_uring is unavailable is a user error.
pub fn choose(spec: &LoadSpec) -> Result<IoUsed, SpecError> {
    choose_with(spec, uring::probe)
}

fn choose_with(
    spec: &LoadSpec,
    probe: impl FnOnce() -> Result<(), String>,
) -> Result<IoUsed, SpecError> {
    let used = |backend, reason: &str| IoUsed {
        requested: spec.io,
        backend,
        reason: reason.to_string(),
    };
    let open = matches!(spec.model, LoadModel::Open { .. });
    Ok(match spec.io {
        IoChoice::Epoll => used(IoBackend::Epoll, "asked for (--io epoll)"),
        _ if open => used(
            IoBackend::Epoll,
            "the open loop runs on epoll (its sender sleeps to each send's time)",
        ),
        IoChoice::Uring => match probe() {
            Ok(()) => used(IoBackend::Uring, "asked for (--io uring)"),
            Err(why) => return Err(SpecError::UringUnavailable(why)),
        },
        IoChoice::Auto => match probe() {
            Ok(()) => used(IoBackend::Uring, "auto: io_uring is available"),
            Err(why) => used(
                IoBackend::Epoll,
                &format!("auto: io_uring is unavailable ({why}), fell back to epoll"),
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(io: IoChoice, open: bool) -> LoadSpec {
        let model = if open {
            LoadModel::Open {
                rate_per_s: 10.0,
                connections: 1,
                coalesce_us: 20,
            }
        } else {
            LoadModel::Closed {
                connections: 1,
                pipeline: 1,
            }
        };
        LoadSpec {
            io,
            ..crate::spec::tests::spec(model)
        }
    }

    const REFUSED: fn() -> Result<(), String> = || Err("io_uring_setup failed: EPERM".into());
    const FINE: fn() -> Result<(), String> = || Ok(());

    #[test]
    fn auto_falls_back_and_says_why_while_uring_refuses() {
        let got = choose_with(&spec(IoChoice::Auto, false), REFUSED).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
        assert!(got.reason.contains("EPERM"), "{}", got.reason);
        let got = choose_with(&spec(IoChoice::Auto, false), FINE).unwrap();
        assert_eq!(got.backend, IoBackend::Uring);
        assert!(matches!(
            choose_with(&spec(IoChoice::Uring, false), REFUSED),
            Err(SpecError::UringUnavailable(w)) if w.contains("EPERM")
        ));
    }

    #[test]
    fn the_open_loop_and_an_explicit_epoll_never_probe() {
        let never = || -> Result<(), String> { panic!("probed") };
        let got = choose_with(&spec(IoChoice::Auto, true), never).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
        let got = choose_with(&spec(IoChoice::Epoll, false), never).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
    }
}
