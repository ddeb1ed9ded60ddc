//! `[[services]]`: at least one, each with a unique name and a binary that exists.

use super::Errs;
use super::binaries::Binaries;
use super::names::Names;
use crate::config::ServiceDef;
use crate::config::schema::Service;

pub(super) fn check(errs: &mut Errs, services: &[Service], binaries: &Binaries) -> Vec<ServiceDef> {
    if services.is_empty() {
        errs.at(0..0, "services", "no [[services]] defined");
    }
    let mut names = Names::default();
    services
        .iter()
        .enumerate()
        .map(|(i, s)| ServiceDef {
            name: names.add(errs, &s.name, format!("services[{i}].name")),
            binary: binaries.resolve(errs, &s.binary, &format!("services[{i}].binary")),
            args: s.args.clone(),
        })
        .collect()
}
