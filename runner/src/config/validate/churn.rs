//! `scenarios[].load` with `model = "churn"`: one level per connection count, each fitting
//! this machine's open files and local ports (the runner and the service both hold every
//! connection), and `cycles` rounds of open → hold → close, `2..=MAX_CHURN_CYCLES`.

use loadgen::LoadModel;
use toml::Spanned;

use super::Errs;
use super::bounds::MAX_CHURN_CYCLES;
use super::host::Host;
use crate::config::Level;
use crate::config::schema::Load;
use crate::results::churn::ChurnSpec;

pub(super) fn levels(
    errs: &mut Errs,
    load: &Load,
    host: &Host,
    field: &impl Fn(&str) -> String,
) -> Vec<Spanned<Level>> {
    let cycles = cycles(errs, load, field);
    let field = field("connections");
    super::connections::list(errs, load, "churn", &field)
        .iter()
        .map(|c| {
            let connections = *c.get_ref();
            if connections > 0 {
                host.check_connections(errs, c.span(), &field, connections);
            }
            let level = Level {
                label: format!("c{connections}x{cycles}"),
                model: LoadModel::Closed {
                    connections,
                    pipeline: 1,
                },
                churn: Some(ChurnSpec {
                    connections,
                    cycles,
                }),
            };
            Spanned::new(c.span(), level)
        })
        .collect()
}

/// Required, `2..=MAX_CHURN_CYCLES`.
fn cycles(errs: &mut Errs, load: &Load, field: &impl Fn(&str) -> String) -> u32 {
    let field = field("cycles");
    let Some(c) = &load.cycles else {
        errs.at(
            load.model.span(),
            field,
            format!("churn model needs cycles = 2..={MAX_CHURN_CYCLES}"),
        );
        return 0;
    };
    let n = *c.get_ref();
    if !(2..=MAX_CHURN_CYCLES).contains(&n) {
        errs.at(
            c.span(),
            field,
            format!(
                "must be between 2 (the fewest that show a trend) and {MAX_CHURN_CYCLES}; got {n}"
            ),
        );
    }
    n
}
