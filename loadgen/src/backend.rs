//! Which I/O backend a run uses, and why: `--io` against what this process may use. The
//! open loop always runs on epoll (its sender sleeps on `clock_nanosleep` between sends and
//! reads stamped arrivals; io_uring would change none of that); the closed loop runs on
//! io_uring where the kernel allows it, receiving multishot where the kernel has that.

use crate::report::{IoBackend, IoUsed, Receive, ReceiveUsed};
use crate::spec::{IoChoice, LoadModel, LoadSpec, SpecError};
use crate::sys::uring;

/// The backend for `spec`; `--io uring` where io_uring is unavailable is a user error.
pub fn choose(spec: &LoadSpec) -> Result<IoUsed, SpecError> {
    choose_with(spec, uring::probe)
}

/// `probe` says whether io_uring may be used here (`Err`: why not) and, if so, whether it
/// has multishot receive with provided-buffer rings (`Ok(Err)`: why not).
fn choose_with(
    spec: &LoadSpec,
    probe: impl FnOnce() -> Result<Result<(), String>, String>,
) -> Result<IoUsed, SpecError> {
    let epoll = |reason: &str| IoUsed {
        requested: spec.io,
        backend: IoBackend::Epoll,
        reason: reason.to_string(),
        receive: None,
    };
    // On io_uring, receives are multishot unless asked otherwise or the kernel lacks it.
    let uring = |reason: &str, multishot: Result<(), String>| {
        let (mode, why) = match (spec.io, multishot) {
            (IoChoice::UringOneshot, _) => (Receive::OneShot, asked(spec.io)),
            (_, Ok(())) => (Receive::Multishot, "the kernel has it".into()),
            (_, Err(why)) => (Receive::OneShot, why),
        };
        IoUsed {
            requested: spec.io,
            backend: IoBackend::Uring,
            reason: reason.to_string(),
            receive: Some(ReceiveUsed { mode, reason: why }),
        }
    };
    let open = matches!(spec.model, LoadModel::Open { .. });
    Ok(match spec.io {
        IoChoice::Epoll => epoll(&asked(spec.io)),
        _ if open => epoll("the open loop runs on epoll (its sender sleeps to each send's time)"),
        _ if !spec.protocol.is_http11() => {
            epoll(&format!("{} runs on epoll", spec.protocol.name()))
        }
        IoChoice::Uring | IoChoice::UringOneshot => match probe() {
            Ok(m) => uring(&asked(spec.io), m),
            Err(why) => return Err(SpecError::UringUnavailable(why)),
        },
        IoChoice::Auto => match probe() {
            Ok(m) => uring("auto: io_uring is available", m),
            Err(why) => epoll(&format!(
                "auto: io_uring is unavailable ({why}), fell back to epoll"
            )),
        },
    })
}

/// "asked for (--io NAME)", NAME as the command line spells it.
fn asked(io: IoChoice) -> String {
    let name = clap::ValueEnum::to_possible_value(&io).map(|v| v.get_name().to_string());
    format!("asked for (--io {})", name.unwrap_or_default())
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

    type Probe = fn() -> Result<Result<(), String>, String>;
    const REFUSED: Probe = || Err("io_uring_setup failed: EPERM".into());
    const FINE: Probe = || Ok(Ok(()));
    const NO_MULTISHOT: Probe = || Ok(Err("no provided-buffer rings (6.10+)".into()));

    #[test]
    fn auto_falls_back_and_says_why_while_uring_refuses() {
        let got = choose_with(&spec(IoChoice::Auto, false), REFUSED).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
        assert!(got.reason.contains("EPERM"), "{}", got.reason);
        assert_eq!(got.receive, None);
        let got = choose_with(&spec(IoChoice::Auto, false), FINE).unwrap();
        assert_eq!(got.backend, IoBackend::Uring);
        for io in [IoChoice::Uring, IoChoice::UringOneshot] {
            assert!(matches!(
                choose_with(&spec(io, false), REFUSED),
                Err(SpecError::UringUnavailable(w)) if w.contains("EPERM")
            ));
        }
    }

    #[test]
    fn the_receive_mode_is_multishot_where_the_kernel_has_it_unless_asked_and_says_why() {
        let mode = |io, probe: Probe| {
            let r = choose_with(&spec(io, false), probe)
                .unwrap()
                .receive
                .unwrap();
            (r.mode, r.reason)
        };
        assert_eq!(mode(IoChoice::Auto, FINE).0, Receive::Multishot);
        assert_eq!(mode(IoChoice::Uring, FINE).0, Receive::Multishot);
        let (m, why) = mode(IoChoice::Uring, NO_MULTISHOT);
        assert_eq!(m, Receive::OneShot);
        assert!(why.contains("6.10"), "{why}");
        let (m, why) = mode(IoChoice::UringOneshot, FINE);
        assert_eq!(m, Receive::OneShot);
        assert!(why.contains("--io uring-oneshot"), "{why}");
        let got = choose_with(&spec(IoChoice::UringOneshot, false), FINE).unwrap();
        assert_eq!(got.backend, IoBackend::Uring);
        assert!(got.reason.contains("uring-oneshot"), "{}", got.reason);
    }

    #[test]
    fn the_open_loop_and_an_explicit_epoll_never_probe() {
        let never = || -> Result<Result<(), String>, String> { panic!("probed") };
        let got = choose_with(&spec(IoChoice::Auto, true), never).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
        let got = choose_with(&spec(IoChoice::Epoll, false), never).unwrap();
        assert_eq!(got.backend, IoBackend::Epoll);
    }
}
