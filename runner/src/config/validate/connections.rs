//! `scenarios[].load.connections` of the models that take a list of connection counts
//! (closed and churn): present, at least one level, each >= 1.

use toml::Spanned;

use super::Errs;
use crate::config::schema::Load;

/// `connections = [..]`, required by the `model` that names it: at least one level, each
/// >= 1 (errors here); the levels as written, none when the list is missing.
pub(super) fn list<'a>(
    errs: &mut Errs,
    load: &'a Load,
    model: &str,
    field: &str,
) -> &'a [Spanned<u32>] {
    let Some(conns) = &load.connections else {
        errs.at(
            load.model.span(),
            field,
            format!("{model} model needs connections = [..]"),
        );
        return &[];
    };
    if conns.get_ref().is_empty() || conns.get_ref().iter().any(|c| *c.get_ref() == 0) {
        errs.at(conns.span(), field, "needs at least one level, each >= 1");
    }
    conns.get_ref()
}
