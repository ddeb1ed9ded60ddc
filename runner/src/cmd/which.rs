//! `matrix which --crate NAME`: the services that link a crate, and how — directly or
//! through which dependency — read from this checkout's Cargo.lock (no network, no cargo).
//! A runtime maintainer chooses the services to gate with it.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::WhichArgs;
use crate::config::home_checkout;

pub fn cmd(a: &WhichArgs) -> anyhow::Result<ExitCode> {
    let k = a.krate.as_str();
    let valid = !k.is_empty()
        && k.len() <= 64
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !k.starts_with('-');
    if !valid {
        bail!(
            "--crate {k:?}: not a crate name (letters, digits, '-' and '_', as Cargo.lock \
             spells it)"
        );
    }
    let repo = home_checkout().context("this matrix is not in a pingmatrix checkout")?;
    let lock_path = repo.join("Cargo.lock");
    let lock = std::fs::read_to_string(&lock_path)
        .with_context(|| format!("read {}", lock_path.display()))?;
    print!("{}", render(&lock, k)?);
    Ok(ExitCode::SUCCESS)
}

/// The answer, or Err when no service links the crate.
pub fn render(lock: &str, k: &str) -> anyhow::Result<String> {
    let services = crate::catalogue::catalogue();
    let mut rows = Vec::new();
    for s in services {
        if let Some(l) = crate::cargo::link_path(lock, &s.name, k) {
            let direct = l.chain.len() == 2;
            let others: Vec<&str> = l
                .through
                .iter()
                .map(String::as_str)
                .filter(|t| *t != k)
                .collect();
            let how = match (direct, others.is_empty()) {
                (true, true) => "directly".to_string(),
                (true, false) => format!("directly, and through {}", others.join(", ")),
                (false, _) => format!("through {}", others.join(", ")),
            };
            rows.push((s.name.clone(), how, l.versions.join(", ")));
        }
    }
    if rows.is_empty() {
        bail!(
            "no service links {k:?} (Cargo.lock, services/services.toml): nothing to gate; \
             the crate's name is as Cargo.lock spells it (e.g. `httparse`, `tokio`)"
        );
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = format!(
        "{k}: linked into {} of {} services (Cargo.lock)\n",
        rows.len(),
        services.len()
    );
    for (name, how, versions) in rows {
        out += &format!("  {name:<w$}  {k} {versions}, {how}\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_lock_answers_for_httparse_and_refuses_a_crate_no_service_links() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
        let out = render(&lock, "httparse").unwrap();
        assert!(out.contains("ping-epoll"), "{out}");
        assert!(out.contains("through"), "{out}");
        let e = render(&lock, "no-such-crate-here").unwrap_err().to_string();
        assert!(e.contains("no service links"), "{e}");
    }
}
