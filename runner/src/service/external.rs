//! Services the suite did not write (`command = [...]` in the matrix file): their argument
//! template and its placeholders. Such a server is told where to listen only through the
//! template, prints no start-up line (so its runtime is not known: results say "external:
//! runtime not reported"), and is verified on the scenario's own path only (it need not
//! have the contract's other endpoints); everything else — readiness by polling the path,
//! confinement, sampling, every metric — is what any service gets.

use std::net::SocketAddr;

/// The placeholders a template may use.
pub const PLACEHOLDERS: [&str; 4] = ["addr", "host", "port", "workers"];

/// What results.md says of an external service's runtime.
pub use crate::results::group::EXTERNAL_RUNTIME;

/// The placeholders in `arg`, in order; Err(name) for the first unknown one.
pub fn placeholders(arg: &str) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(at) = rest.find('{') {
        let after = &rest[at + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        match PLACEHOLDERS.iter().find(|p| **p == name) {
            Some(p) => out.push(*p),
            None => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// The template with every placeholder replaced for one start.
pub fn expand(template: &[String], addr: SocketAddr, workers: u32) -> Vec<String> {
    template
        .iter()
        .map(|a| {
            a.replace("{addr}", &addr.to_string())
                .replace("{host}", &addr.ip().to_string())
                .replace("{port}", &addr.port().to_string())
                .replace("{workers}", &workers.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_and_unknown_ones_named() {
        assert_eq!(
            placeholders("--bind={host}:{port}"),
            Ok(vec!["host", "port"])
        );
        assert_eq!(placeholders("plain"), Ok(vec![]));
        assert_eq!(placeholders("{prot}"), Err("prot".into()));
    }

    #[test]
    fn a_template_is_expanded_for_one_start() {
        let t: Vec<String> = [
            "-m",
            "http.server",
            "{port}",
            "--bind",
            "{host}",
            "-w{workers}",
            "{addr}",
        ]
        .map(String::from)
        .to_vec();
        let addr: SocketAddr = "127.0.0.1:8081".parse().unwrap();
        assert_eq!(
            expand(&t, addr, 2),
            [
                "-m",
                "http.server",
                "8081",
                "--bind",
                "127.0.0.1",
                "-w2",
                "127.0.0.1:8081"
            ]
        );
    }
}
