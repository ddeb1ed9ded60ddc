//! The one list of ping services, `services/services.toml`, compiled in and checked: what the
//! conformance suite runs, the charts colour, the runner lists, and the results viewer filters
//! on (runtime model, I/O driver). Adding a runtime is its crate plus one entry in that file.

use std::sync::OnceLock;

use serde::Deserialize;

/// The text of `services/services.toml`.
pub const SERVICES_TOML: &str = include_str!("../../services.toml");

/// Scheduling models a service may have (the start-up line's `model`).
pub const MODELS: &[&str] = &["work-stealing", "thread-per-core", "coroutine"];
/// I/O drivers a service may have: `io_uring-or-epoll` is io_uring where it can be set up,
/// else epoll (the start-up line says which it got).
pub const IO_DRIVERS: &[&str] = &["epoll", "io_uring", "io_uring-or-epoll"];
/// Protocols a service may serve: HTTP/1.1 in cleartext (every service), HTTP/2 over
/// cleartext with prior knowledge (`--protocol h2c`), HTTP/1.1 over TLS 1.3 (ALPN http/1.1)
/// and HTTP/2 over TLS 1.3 (ALPN h2; the same port takes HTTP/1.1 by ALPN http/1.1 too).
pub const PROTOCOLS: &[&str] = &["http/1.1", "h2c", "http/1.1+tls", "h2+tls"];

/// Whether `protocol` (a name of [`PROTOCOLS`]) is served over TLS: a service started with it
/// needs `--tls-cert` and `--tls-key`.
pub fn is_tls(protocol: &str) -> bool {
    protocol.ends_with("+tls")
}

/// One service of the list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Binary name, and the start-up line's `service`.
    pub name: String,
    /// Crate directory under `services/`; its hello-world example is `hello-<dir>`.
    pub dir: String,
    /// The start-up line's `runtime`.
    pub runtime: String,
    /// The runtime's crates, whose resolved versions a variant records (empty for a service
    /// on libc alone).
    pub crates: Vec<String>,
    /// One of [`MODELS`].
    pub model: String,
    /// One of [`IO_DRIVERS`].
    pub io_driver: String,
    /// No epoll fallback: cannot run where io_uring cannot be set up.
    pub io_uring_only: bool,
    /// Index into the charts' fixed palette.
    pub palette: usize,
    /// What it serves, of [`PROTOCOLS`] (HTTP/1.1 always): a cell of another protocol is not
    /// run for it, and reads "n/a" in every view.
    pub protocols: Vec<String>,
}

impl Service {
    /// Whether it serves `protocol` (a name of [`PROTOCOLS`]).
    pub fn serves(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|p| p == protocol)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    service: Vec<Service>,
}

/// Parses and checks a services list: at least one service; names, dirs and palette entries
/// unique; known models and drivers; `io_uring_only` only with the `io_uring` driver.
pub fn parse(text: &str) -> Result<Vec<Service>, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("services list: {e}"))?;
    let services = file.service;
    if services.is_empty() {
        return Err("services list: no [[service]]".into());
    }
    for (i, s) in services.iter().enumerate() {
        let dup = |what: &str, f: &dyn Fn(&Service) -> String| -> Result<(), String> {
            match services[..i].iter().find(|o| f(o) == f(s)) {
                Some(_) => Err(format!("services list: {what} {:?} appears twice", f(s))),
                None => Ok(()),
            }
        };
        dup("name", &|x| x.name.clone())?;
        dup("dir", &|x| x.dir.clone())?;
        dup("palette entry", &|x| x.palette.to_string())?;
        if !MODELS.contains(&s.model.as_str()) {
            return Err(format!(
                "services list: {}: model {:?} is not one of {MODELS:?}",
                s.name, s.model
            ));
        }
        if !IO_DRIVERS.contains(&s.io_driver.as_str()) {
            return Err(format!(
                "services list: {}: io_driver {:?} is not one of {IO_DRIVERS:?}",
                s.name, s.io_driver
            ));
        }
        if let Some(p) = s
            .protocols
            .iter()
            .find(|p| !PROTOCOLS.contains(&p.as_str()))
        {
            return Err(format!(
                "services list: {}: protocol {p:?} is not one of {PROTOCOLS:?}",
                s.name
            ));
        }
        if !s.serves("http/1.1") {
            return Err(format!(
                "services list: {}: protocols must include \"http/1.1\" (the contract)",
                s.name
            ));
        }
        if s.io_uring_only && s.io_driver != "io_uring" {
            return Err(format!(
                "services list: {}: io_uring_only needs io_driver \"io_uring\"",
                s.name
            ));
        }
    }
    Ok(services)
}

/// The project's services, in the list's order.
pub fn catalogue() -> &'static [Service] {
    static SERVICES: OnceLock<Vec<Service>> = OnceLock::new();
    // The compiled-in file is checked by this crate's tests: a bad edit fails them.
    SERVICES.get_or_init(|| parse(SERVICES_TOML).unwrap_or_else(|e| panic!("{e}")))
}

/// Every service's runtime crates, once each, in the list's order: what a variant records
/// the resolved versions of.
pub fn runtime_crates() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for c in catalogue().iter().flat_map(|s| &s.crates) {
        if !out.contains(&c.as_str()) {
            out.push(c);
        }
    }
    out
}

/// The service of this name, if it is one of the project's.
pub fn find(name: &str) -> Option<&'static Service> {
    catalogue().iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_parses_and_matches_the_crates() {
        let services = parse(SERVICES_TOML).unwrap();
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        // Every service crate (a crate under services/ with a binary) is listed, no more.
        let mut dirs: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .filter_map(|e| {
                let p = e.ok()?.path();
                p.join("src/main.rs")
                    .exists()
                    .then(|| p.file_name()?.to_str().map(String::from))?
            })
            .collect();
        dirs.sort();
        let mut listed: Vec<String> = services.iter().map(|s| s.dir.clone()).collect();
        listed.sort();
        assert_eq!(listed, dirs, "services.toml against the service crates");
        assert!(runtime_crates().contains(&"tokio") && runtime_crates().contains(&"may_minihttp"));
        // A runtime crate no build resolves would record nothing: each is in the lock file.
        let lock = std::fs::read_to_string(format!("{root}/../Cargo.lock")).unwrap();
        for c in runtime_crates() {
            assert!(
                lock.contains(&format!("name = \"{c}\"\n")),
                "services.toml names crate {c}, which Cargo.lock does not resolve"
            );
        }
        for s in &services {
            let manifest = std::fs::read_to_string(format!("{root}/{}/Cargo.toml", s.dir))
                .unwrap_or_else(|e| panic!("{}: no crate in services/{}: {e}", s.name, s.dir));
            assert!(
                manifest.contains(&format!("name = \"{}\"", s.name)),
                "services/{}/Cargo.toml is not package {}",
                s.dir,
                s.name
            );
            assert!(
                manifest.contains(&format!("name = \"hello-{}\"", s.dir)),
                "services/{} has no hello-{} example",
                s.dir,
                s.dir
            );
        }
        assert_eq!(find("ping-epoll").map(|s| s.dir.as_str()), Some("epoll"));
        assert_eq!(find("ping-nothing"), None);
    }

    /// services/README.md's table has one row per service, no more.
    #[test]
    fn the_services_readme_table_lists_exactly_these() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        let rows: Vec<&str> = readme
            .lines()
            .filter_map(|l| l.strip_prefix("| `ping-")?.split_once('`').map(|(n, _)| n))
            .collect();
        let mut listed: Vec<String> = rows.iter().map(|n| format!("ping-{n}")).collect();
        let mut names: Vec<String> = catalogue().iter().map(|s| s.name.clone()).collect();
        listed.sort();
        names.sort();
        assert_eq!(listed, names);
    }

    #[test]
    fn tls_protocols_are_the_plus_tls_ones() {
        let tls: Vec<&str> = PROTOCOLS.iter().copied().filter(|p| is_tls(p)).collect();
        assert_eq!(tls, ["http/1.1+tls", "h2+tls"]);
    }

    #[test]
    fn bad_lists_are_refused_with_the_reason() {
        let one = |extra: &str| {
            format!(
                "[[service]]\nname = \"a\"\ndir = \"a\"\nruntime = \"r\"\ncrates = []\nmodel = \"coroutine\"\n\
                 io_driver = \"epoll\"\nio_uring_only = false\npalette = 0\nprotocols = [\"http/1.1\"]\n{extra}"
            )
        };
        let twice = format!("{}{}", one(""), one(""));
        assert!(
            parse(&twice)
                .unwrap_err()
                .contains("name \"a\" appears twice")
        );
        assert!(parse("").unwrap_err().contains("missing field"));
        let served = |p: &str| parse(&one("").replace("protocols = [\"http/1.1\"]", p));
        assert!(
            served("protocols = [\"http/1.1\", \"h3\"]")
                .unwrap_err()
                .contains("protocol \"h3\" is not one of")
        );
        assert!(
            served("protocols = [\"h2c\"]")
                .unwrap_err()
                .contains("must include \"http/1.1\"")
        );
        assert!(served("protocols = [\"http/1.1\", \"h2c\"]").unwrap()[0].serves("h2c"));
        let tls = served("protocols = [\"http/1.1\", \"http/1.1+tls\", \"h2+tls\"]").unwrap();
        assert!(tls[0].serves("h2+tls") && !tls[0].serves("h2c"));
        assert!(
            served("protocols = [\"http/1.1\", \"h2+ssl\"]")
                .unwrap_err()
                .contains("protocol \"h2+ssl\" is not one of")
        );
        assert!(
            parse(&one("colour = 1\n"))
                .unwrap_err()
                .contains("unknown field")
        );
        let bad_model = one("").replace("coroutine", "green-threads");
        assert!(
            parse(&bad_model)
                .unwrap_err()
                .contains("model \"green-threads\"")
        );
        let bad_only = one("").replace("io_uring_only = false", "io_uring_only = true");
        assert!(
            parse(&bad_only)
                .unwrap_err()
                .contains("io_uring_only needs")
        );
    }
}
