//! Names of services, scenarios and profiles: each becomes part of a cell key
//! (`<service>__<scenario>__<level>__<profile>`) and of the file name of its results.

use std::collections::BTreeSet;

use toml::Spanned;

use super::Errs;

fn valid(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// The names of one section, each checked as it is added.
#[derive(Default)]
pub(super) struct Names(BTreeSet<String>);

impl Names {
    /// Checks `name` (field e.g. "services[0].name") and remembers it; returns it.
    pub fn add(&mut self, errs: &mut Errs, name: &Spanned<String>, field: String) -> String {
        let s = name.get_ref();
        if !valid(s) {
            errs.at(
                name.span(),
                field,
                format!("{s:?} is not a valid name (use letters, digits, '-', '_', '.')"),
            );
        } else if !self.0.insert(s.clone()) {
            errs.at(name.span(), field, format!("duplicate name {s:?}"));
        }
        s.clone()
    }
}
