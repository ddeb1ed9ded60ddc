//! `command = [...]` of `[[services]]`: a server the suite did not write. The program is
//! looked up like a binary, but one that is missing is not an error here — its cells fail
//! with the reason when it cannot be started (it may be installed only where the run
//! happens). Placeholders `{addr}` (ip:port), `{host}`, `{port}` and `{workers}` are
//! replaced per start; `{port}` or `{addr}` must appear, since the runner picks a free port
//! for every start.

use toml::Spanned;

use super::Errs;
use super::binaries::Binaries;
use crate::binaries::resolve_binary;
use crate::config::ServiceDef;
use crate::service::external::{PLACEHOLDERS, placeholders};

pub(super) fn check(
    errs: &mut Errs,
    command: &Spanned<Vec<String>>,
    field: &str,
    binaries: &Binaries,
    name: &str,
) -> ServiceDef {
    let argv = command.get_ref();
    let program = argv.first().cloned().unwrap_or_default();
    if program.is_empty() {
        errs.at(
            command.span(),
            field,
            "empty: give the program, then its arguments",
        );
    }
    if let Some(c) = argv.iter().flat_map(|a| a.chars()).find(|c| c.is_control()) {
        errs.at(
            command.span(),
            field,
            format!("contains the control character {c:?}"),
        );
    }
    let mut seen = Vec::new();
    for a in argv {
        match placeholders(a) {
            Ok(p) => seen.extend(p),
            Err(bad) => errs.at(
                command.span(),
                field,
                format!(
                    "unknown placeholder {{{bad}}} in {a:?} (known: {})",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                ),
            ),
        }
    }
    if !seen.iter().any(|p| *p == "port" || *p == "addr") {
        errs.at(
            command.span(),
            field,
            "has no {port} or {addr}: the runner starts the server on a free port each time \
             and must tell it which",
        );
    }
    let binary = resolve_binary(&program, binaries.base, binaries.exe_dir)
        .unwrap_or_else(|_| program.clone().into());
    ServiceDef {
        name: name.to_string(),
        binary,
        args: argv.iter().skip(1).cloned().collect(),
        external: true,
        variant: None,
        unavailable: None,
    }
}
