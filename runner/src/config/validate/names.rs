//! Names of services, scenarios and profiles. Each becomes a part of a cell key,
//! `<service>__<scenario>__<level>__<profile>`, which is also the file name of the cell's
//! results; so a name is letters, digits, '-', '_' and '.', with no "__" inside and no '_'
//! at either end. Then every "__" in a key is a separator, and — with names unique within
//! their section and level labels unique within their scenario (see `scenarios`) — no two
//! cells share a key.

use std::collections::BTreeSet;

use toml::Spanned;

use super::Errs;

/// Longest name: four parts and ".json" stay well under the 255-byte file name limit.
const MAX_NAME_LEN: usize = 64;

/// Why `s` cannot be a name, if it cannot.
fn problem(s: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    if s.is_empty() || !s.chars().all(allowed) {
        Some(format!(
            "{s:?} is not a valid name (use letters, digits, '-', '_', '.')"
        ))
    } else if s.contains("__") {
        Some(format!(
            "{s:?} contains \"__\", the separator of cell keys \
             (<service>__<scenario>__<level>__<profile>): two cells could share a key"
        ))
    } else if s.starts_with('_') || s.ends_with('_') {
        Some(format!(
            "{s:?} starts or ends with '_', which runs into the \"__\" separator of cell keys: \
             two cells could share a key"
        ))
    } else if s.len() > MAX_NAME_LEN {
        Some(format!(
            "{s:?} is longer than {MAX_NAME_LEN} characters (cell keys are file names)"
        ))
    } else {
        None
    }
}

/// The names of one section, each checked as it is added.
#[derive(Default)]
pub(super) struct Names(BTreeSet<String>);

impl Names {
    /// Checks `name` (field e.g. "services[0].name") and remembers it; returns it.
    pub fn add(&mut self, errs: &mut Errs, name: &Spanned<String>, field: String) -> String {
        let s = name.get_ref();
        if let Some(message) = problem(s) {
            errs.at(name.span(), field, message);
        } else if !self.0.insert(s.clone()) {
            errs.at(name.span(), field, format!("duplicate name {s:?}"));
        }
        s.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::problem;

    #[test]
    fn names_that_could_run_together_in_a_key_are_refused() {
        for ok in ["ping", "ping-tokio-hyper", "k8s_small", "v1.2", "a_b-c"] {
            assert_eq!(problem(ok), None, "{ok}");
        }
        for bad in ["", "a b", "a/b", "a__b", "_a", "a_", "é", &"x".repeat(65)] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
    }
}
