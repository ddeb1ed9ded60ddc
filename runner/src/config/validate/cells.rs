//! Cells named in the file — `quick.cells` ("scenario/level/profile") and
//! `defaults.reference` ("service/scenario/level/profile") — must be cells of the plan.

use toml::Spanned;

use super::Errs;
use crate::config::{ProfileDef, ScenarioDef, ServiceDef};

/// The checked sections a cell name is looked up in.
pub(super) struct Cells<'a> {
    pub services: &'a [ServiceDef],
    pub scenarios: &'a [ScenarioDef],
    pub profiles: &'a [ProfileDef],
}

impl Cells<'_> {
    fn exists(&self, scenario: &str, level: &str, profile: &str) -> bool {
        self.profiles.iter().any(|p| p.name == profile)
            && self.scenarios.iter().any(|s| {
                s.name == scenario
                    && s.levels.iter().any(|l| l.label == level)
                    && s.profiles
                        .as_ref()
                        .is_none_or(|ps| ps.iter().any(|p| p == profile))
            })
    }

    pub fn check_quick(&self, errs: &mut Errs, cells: &Spanned<Vec<String>>) {
        for c in cells.get_ref() {
            let ok = matches!(c.split('/').collect::<Vec<_>>()[..],
                [scenario, level, profile] if self.exists(scenario, level, profile));
            if !ok {
                errs.at(
                    cells.span(),
                    "quick.cells",
                    format!("{c:?} is not an existing \"scenario/level/profile\" cell"),
                );
            }
        }
    }

    pub fn check_reference(&self, errs: &mut Errs, r: &Spanned<String>) {
        let ok = matches!(r.get_ref().split('/').collect::<Vec<_>>()[..],
            [service, scenario, level, profile]
                if self.services.iter().any(|s| s.name == service)
                    && self.exists(scenario, level, profile));
        if !ok {
            errs.at(
                r.span(),
                "defaults.reference",
                format!(
                    "{:?} is not an existing \"service/scenario/level/profile\" cell",
                    r.get_ref()
                ),
            );
        }
    }
}
