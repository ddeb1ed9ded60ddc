//! Command line shared by every service: `--listen`, `--workers`, `--burn-ns`, `--burn-iters`,
//! `--burn-syscalls`, `--burn-faults`, `--split-write-every`, `--protocol`, `--tls-cert`,
//! `--tls-key`, `--help`.
//!
//! clap exits with code 2 and a clear message on bad arguments, 0 on `--help`; a service that
//! fails after that exits with code 1 and `<service>: <error>` on stderr ([`run_service`]).

use std::fmt::Display;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::RangedI64ValueParser;
use clap::{CommandFactory, FromArgMatches, Parser};

use crate::burn::{MAX_BURN_FAULTS, MAX_BURN_ITERS, MAX_BURN_NS, MAX_BURN_SYSCALLS_EVERY};
use crate::split::MAX_SPLIT_WRITE_EVERY;

/// Arguments every ping service accepts.
#[derive(Debug, Clone, Parser)]
#[command(
    about = "HTTP/1.1 ping service (pingmatrix); prints one JSON start-up line on stdout",
    version,
    // The build stamp: `--version` shows it, and the runner finds it in the binary's bytes.
    long_version = pingmatrix_stamp::STAMP
)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port (reported in the start-up line).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Worker threads [default: the CPUs this process may run on (affinity mask / cpuset)].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub workers: Option<u16>,

    /// Calibration aid: spin N ns of CPU per request, 0 to 1000000000 (1 s).
    // Parsed as i64 so that a negative value gets "-1 is not in 0..=1000000000".
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = RangedI64ValueParser::<u64>::new().range(0..=MAX_BURN_NS as i64)
    )]
    pub burn_ns: u64,

    /// Calibration aid: N iterations of one fixed loop per request, 0 to 1000000000 (a known
    /// instruction cost, the same on every machine).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = RangedI64ValueParser::<u64>::new().range(0..=MAX_BURN_ITERS as i64)
    )]
    pub burn_iters: u64,

    /// Calibration aid: one cheap syscall (getppid) every N requests, 0 (none) to 1000000 (a
    /// known number of kernel entries per request).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = RangedI64ValueParser::<u64>::new().range(0..=MAX_BURN_SYSCALLS_EVERY as i64)
    )]
    pub burn_syscalls: u64,

    /// Calibration aid: N fresh pages touched per request, 0 to 64 (N minor page faults per
    /// request: kernel work that is neither a syscall nor a packet).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = RangedI64ValueParser::<u64>::new().range(0..=MAX_BURN_FAULTS as i64)
    )]
    pub burn_faults: u64,

    /// Calibration aid: every N-th response write as two writes (two TCP segments), 0 (never)
    /// to 1000000 (a known amount of kernel work per request that a syscall count may miss).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = RangedI64ValueParser::<u64>::new().range(0..=MAX_SPLIT_WRITE_EVERY as i64)
    )]
    pub split_write_every: u64,

    /// What to serve: http/1.1, h2c (HTTP/2 over cleartext with prior knowledge), http/1.1+tls
    /// or h2+tls (over TLS 1.3, with --tls-cert and --tls-key) where services/services.toml
    /// says this service serves it; another is refused (exit 2).
    #[arg(long, value_name = "PROTOCOL", default_value = "http/1.1",
          value_parser = clap::builder::PossibleValuesParser::new(ping_catalogue::PROTOCOLS))]
    pub protocol: String,

    /// The certificate chain (PEM) a TLS protocol serves; only with http/1.1+tls or h2+tls.
    #[arg(long, value_name = "PATH")]
    pub tls_cert: Option<PathBuf>,

    /// The certificate's private key (PEM); only with http/1.1+tls or h2+tls.
    #[arg(long, value_name = "PATH")]
    pub tls_key: Option<PathBuf>,
}

impl Args {
    /// Parses the process arguments for `service` (its name in `--help` and `--version`); on
    /// error prints the message and exits with code 2.
    pub fn from_env(service: &'static str) -> Self {
        let matches = Self::command().name(service).get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// The certificate and key paths when `--protocol` is a TLS one (both given: checked by
    /// [`run_service`] before a service runs), else None.
    pub fn tls(&self) -> Option<(&Path, &Path)> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) if ping_catalogue::is_tls(&self.protocol) => {
                Some((cert.as_path(), key.as_path()))
            }
            _ => None,
        }
    }

    /// Why `--protocol`, `--tls-cert` and `--tls-key` do not go together, if they do not: a TLS
    /// protocol needs both, a cleartext one takes neither.
    pub fn tls_mismatch(&self) -> Option<String> {
        let given: Vec<&str> = [
            self.tls_cert.as_ref().map(|_| "--tls-cert"),
            self.tls_key.as_ref().map(|_| "--tls-key"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if ping_catalogue::is_tls(&self.protocol) {
            let missing: Vec<&str> = ["--tls-cert", "--tls-key"]
                .into_iter()
                .filter(|f| !given.contains(f))
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "--protocol {} needs {} (PEM files: the certificate chain and its private key)",
                    self.protocol,
                    missing.join(" and ")
                )
            })
        } else {
            (!given.is_empty()).then(|| {
                format!(
                    "{} given with --protocol {}: the TLS flags go with a TLS protocol \
                     (http/1.1+tls, h2+tls) alone",
                    given.join(" and "),
                    self.protocol
                )
            })
        }
    }

    /// Worker count to use: `--workers`, else the number of CPUs we may run on.
    pub fn workers(&self) -> usize {
        self.workers
            .map(usize::from)
            .unwrap_or_else(crate::cpus::allowed_cpu_count)
    }
}

/// A service's `main`: parses the arguments, sets the per-request `--burn-ns`,
/// `--burn-iters` and `--burn-syscalls` costs, runs `run`,
/// and reports its error (with its causes, `{:#}`) on stderr as `<service>: <error>`, exiting
/// with code 1.
pub fn run_service<E: Display>(
    service: &'static str,
    run: impl FnOnce(Args) -> Result<(), E>,
) -> ExitCode {
    let args = Args::from_env(service);
    crate::burn::set_per_request_ns(args.burn_ns);
    crate::burn::set_per_request_iters(args.burn_iters);
    crate::burn::set_syscall_every(args.burn_syscalls);
    if let Err(e) = crate::burn::set_faults(args.burn_faults) {
        eprintln!("{service}: --burn-faults: cannot map the pages it touches: {e}");
        return ExitCode::FAILURE;
    }
    if args.split_write_every != 0 && crate::split::UNSUPPORTED.contains(&service) {
        // A bad argument for this service, refused as clap refuses one: before anything binds.
        eprintln!(
            "error: --split-write-every is not supported by {service}: its HTTP library writes responses itself, with no hook to split them"
        );
        return ExitCode::from(2);
    }
    crate::split::set_every(args.split_write_every);
    if args.protocol != "http/1.1"
        && !ping_catalogue::find(service).is_some_and(|s| s.serves(&args.protocol))
    {
        eprintln!(
            "error: {service} does not serve {} (services/services.toml lists what each service serves)",
            args.protocol
        );
        return ExitCode::from(2);
    }
    if let Some(why) = args.tls_mismatch() {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{service}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Refuses a bad argument found after parsing (e.g. a `--tls-cert` that does not load) as clap
/// refuses one: `error: <why>` on stderr and exit code 2. Call it before anything binds.
pub fn refuse(why: impl Display) -> ! {
    eprintln!("error: {why}");
    std::process::exit(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let a = Args::try_parse_from(["x"]).unwrap();
        assert_eq!(a.listen, "127.0.0.1:8080".parse().unwrap());
        assert!(a.workers.is_none());
        assert!(a.workers() >= 1);
        assert_eq!(a.burn_ns, 0);
        assert_eq!(a.burn_iters, 0);
        assert_eq!(a.burn_syscalls, 0);
        assert_eq!(a.split_write_every, 0);
        assert_eq!(a.burn_faults, 0);
        let a = Args::try_parse_from(["x", "--burn-faults", "64"]).unwrap();
        assert_eq!(a.burn_faults, MAX_BURN_FAULTS);
        let a = Args::try_parse_from(["x", "--split-write-every", "20"]).unwrap();
        assert_eq!(a.split_write_every, 20);
    }

    #[test]
    fn explicit_values() {
        let a = Args::try_parse_from(["x", "--listen", "127.0.0.1:0", "--workers", "3"]).unwrap();
        assert_eq!(a.listen.port(), 0);
        assert_eq!(a.workers(), 3);
        for (given, want) in [
            ("0", 0),
            ("2000000", 2_000_000),
            ("1000000000", MAX_BURN_NS),
        ] {
            let a = Args::try_parse_from(["x", "--burn-ns", given]).unwrap();
            assert_eq!(a.burn_ns, want);
            let a = Args::try_parse_from(["x", "--burn-iters", given]).unwrap();
            assert_eq!(a.burn_iters, want);
        }
    }

    #[test]
    fn tls_flags_go_with_tls_protocols_alone() {
        let parse = |a: &[&str]| Args::try_parse_from([&["x"], a].concat()).unwrap();
        let both = ["--tls-cert", "c.pem", "--tls-key", "k.pem"];
        for p in ["http/1.1+tls", "h2+tls"] {
            let a = parse(&[&["--protocol", p], &both[..]].concat());
            assert_eq!(a.tls_mismatch(), None);
            assert_eq!(a.tls(), Some((Path::new("c.pem"), Path::new("k.pem"))));
            let why = parse(&["--protocol", p]).tls_mismatch().unwrap();
            assert!(why.contains("needs --tls-cert and --tls-key"), "{why}");
            let why = parse(&["--protocol", p, "--tls-cert", "c.pem"])
                .tls_mismatch()
                .unwrap();
            assert!(
                why.ends_with(
                    "needs --tls-key (PEM files: the certificate chain and its private key)"
                ),
                "{why}"
            );
        }
        for p in ["http/1.1", "h2c"] {
            let a = parse(&["--protocol", p]);
            assert_eq!((a.tls_mismatch(), a.tls()), (None, None));
            let why = parse(&[&["--protocol", p], &both[..]].concat())
                .tls_mismatch()
                .unwrap();
            assert!(
                why.contains("--tls-cert and --tls-key given with --protocol"),
                "{why}"
            );
            assert!(
                parse(&["--protocol", p, "--tls-key", "k.pem"])
                    .tls_mismatch()
                    .is_some()
            );
        }
        let err = Args::try_parse_from(["x", "--protocol", "h2+ssl"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let err = Args::try_parse_from(["x", "--protocol", "h2+tls", "--tls-cert"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn bad_values_are_usage_errors_with_exit_code_2() {
        for bad in [
            vec!["x", "--workers", "0"],
            vec!["x", "--workers", "many"],
            vec!["x", "--listen", "nowhere"],
            vec!["x", "--bogus"],
            vec!["x", "--burn-ns", "-1"],
            vec!["x", "--burn-ns=-1"],
            vec!["x", "--burn-ns", "1000000001"],
            vec!["x", "--burn-ns", "99999999999999999999"],
            vec!["x", "--burn-ns", "1ms"],
            vec!["x", "--burn-ns"],
            vec!["x", "--burn-iters", "-1"],
            vec!["x", "--burn-iters=-5"],
            vec!["x", "--burn-iters", "1000000001"],
            vec!["x", "--burn-iters", "99999999999999999999"],
            vec!["x", "--burn-iters", "lots"],
            vec!["x", "--burn-syscalls", "-1"],
            vec!["x", "--burn-syscalls", "1000001"],
            vec!["x", "--split-write-every", "-1"],
            vec!["x", "--split-write-every", "1000001"],
            vec!["x", "--split-write-every", "often"],
            vec!["x", "--split-write-every"],
            vec!["x", "--burn-syscalls", "99999999999999999999"],
            vec!["x", "--burn-syscalls", "often"],
            vec!["x", "--burn-iters"],
            vec!["x", "--burn-faults", "-1"],
            vec!["x", "--burn-faults", "65"],
            vec!["x", "--burn-faults", "2.5"],
            vec!["x", "--burn-faults"],
        ] {
            let err = Args::try_parse_from(&bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        let err = Args::try_parse_from(["x", "--burn-ns", "-1"]).unwrap_err();
        assert!(
            err.to_string().contains("-1 is not in 0..=1000000000"),
            "{err}"
        );
    }
}
