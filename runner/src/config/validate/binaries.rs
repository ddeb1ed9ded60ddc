//! Executables named in the file (`defaults.loadgen`, `services[].binary`), resolved the way
//! `crate::binaries` does: a path relative to the matrix file, or a name looked up next to
//! `matrix`, then on PATH.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::Errs;
use crate::binaries::resolve_binary;

pub(super) struct Binaries<'a> {
    /// The matrix file's directory.
    pub base: &'a Path,
    /// The running `matrix`'s directory.
    pub exe_dir: Option<&'a Path>,
}

impl Binaries<'_> {
    /// The executable's path; a missing one is an error (and the name is returned as is).
    /// Spaces are fine (nothing goes through a shell); control characters are refused.
    pub fn resolve(&self, errs: &mut Errs, name: &Spanned<String>, field: &str) -> PathBuf {
        if let Some(c) = name.get_ref().chars().find(|c| c.is_control()) {
            errs.at(
                name.span(),
                field,
                format!(
                    "contains the control character {c:?}; a path with CR, LF or other control \
                     characters breaks the line-based logs and reports, so it is refused"
                ),
            );
            return PathBuf::from(name.get_ref());
        }
        match resolve_binary(name.get_ref(), self.base, self.exe_dir) {
            Ok(p) => p,
            Err(e) => {
                errs.at(name.span(), field, e);
                PathBuf::from(name.get_ref())
            }
        }
    }
}

/// Where a variant's binary will be until `variant` builds it.
pub(super) fn unbuilt(name: &str) -> PathBuf {
    PathBuf::from(format!("(variant {name}: not built yet)"))
}
