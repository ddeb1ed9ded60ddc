//! `[[services]]`: at least one, each with a unique name and either a binary that exists
//! (its `--burn-*` arguments in range: `burn`) or an external `command` (`external`); its
//! variants (`variants`) follow it as services of their own, named `<service>@<variant>`.

use super::binaries::Binaries;
use super::names::Names;
use super::{Errs, burn, external, variants};
use crate::config::ServiceDef;
use crate::config::schema::Service;

pub(super) fn check(errs: &mut Errs, services: &[Service], binaries: &Binaries) -> Vec<ServiceDef> {
    if services.is_empty() {
        errs.at(0..0, "services", "no [[services]] defined");
    }
    let mut names = Names::default();
    let mut out = Vec::new();
    for (i, s) in services.iter().enumerate() {
        let name = names.add(errs, &s.name, format!("services[{i}].name"));
        let field = |f: &str| format!("services[{i}].{f}");
        let def = match (&s.binary, &s.command) {
            (Some(b), None) => {
                burn::check(errs, s.name.span(), &field("args"), &s.args);
                ServiceDef {
                    name: name.clone(),
                    binary: binaries.resolve(errs, b, &field("binary")),
                    args: s.args.clone(),
                    external: false,
                    variant: None,
                    unavailable: None,
                }
            }
            (None, Some(c)) => {
                if !s.args.is_empty() {
                    errs.at(
                        c.span(),
                        field("args"),
                        "an external service takes its arguments in `command`, not `args`",
                    );
                }
                external::check(errs, c, &field("command"), binaries, &name)
            }
            (Some(b), Some(_)) => {
                errs.at(
                    b.span(),
                    field("binary"),
                    "give either `binary` (a service of this suite) or `command` (any HTTP/1.1 \
                     server), not both",
                );
                continue;
            }
            (None, None) => {
                errs.at(
                    s.name.span(),
                    field("binary"),
                    "missing: give `binary` (a service of this suite) or `command` (any \
                     HTTP/1.1 server, with {port} or {addr})",
                );
                continue;
            }
        };
        let variants = match &s.binary {
            Some(b) => variants::check(errs, &def, b.get_ref(), &s.variants, i, binaries),
            None => {
                if let Some(v) = s.variants.first() {
                    errs.at(
                        v.name.span(),
                        field("variants"),
                        "an external `command` service has no source here to build variants of",
                    );
                }
                Vec::new()
            }
        };
        out.push(def);
        out.extend(variants);
    }
    out
}
