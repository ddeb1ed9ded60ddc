//! Cells named in the file — `quick.cells` and `calibration.cells` ("scenario/level/profile")
//! and `defaults.reference` ("service/scenario/level/profile") — must be cells of the plan;
//! services named by `defaults.baseline` and `calibration.service` must be services.

use toml::Spanned;

use super::Errs;
use crate::config::schema::Calibration;
use crate::config::{CalibrationDef, ProfileDef, ScenarioDef, ServiceDef};

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
        self.check_list(errs, cells, "quick.cells");
    }

    fn check_list(&self, errs: &mut Errs, cells: &Spanned<Vec<String>>, field: &str) {
        for c in cells.get_ref() {
            let ok = matches!(c.split('/').collect::<Vec<_>>()[..],
                [scenario, level, profile] if self.exists(scenario, level, profile));
            if !ok {
                errs.at(
                    cells.span(),
                    field,
                    format!("{c:?} is not an existing \"scenario/level/profile\" cell"),
                );
            }
        }
    }

    fn service(&self, errs: &mut Errs, name: &Spanned<String>, field: &str) -> String {
        let n = name.get_ref();
        if !self.services.iter().any(|s| &s.name == n) {
            errs.at(
                name.span(),
                field,
                format!("{n:?} is not a service of this matrix"),
            );
        }
        n.clone()
    }

    /// `defaults.baseline`, or the first service.
    pub fn check_baseline(&self, errs: &mut Errs, b: Option<&Spanned<String>>) -> String {
        match b {
            Some(b) => self.service(errs, b, "defaults.baseline"),
            None => self
                .services
                .first()
                .map(|s| s.name.clone())
                .unwrap_or_default(),
        }
    }

    /// `[calibration]`: its service (default: the baseline) and cells. Churn cells measure
    /// no throughput or CPU per request, so they cannot calibrate.
    pub fn check_calibration(
        &self,
        errs: &mut Errs,
        c: &Calibration,
        baseline: &str,
    ) -> CalibrationDef {
        self.check_list(errs, &c.cells, "calibration.cells");
        if c.cells.get_ref().is_empty() {
            errs.at(c.cells.span(), "calibration.cells", "names no cell");
        }
        for cell in c.cells.get_ref() {
            let churn = cell.split('/').next().is_some_and(|sc| {
                let level = cell.split('/').nth(1).unwrap_or("");
                self.scenarios.iter().any(|s| {
                    s.name == sc
                        && s.levels
                            .iter()
                            .any(|l| l.label == level && l.churn.is_some())
                })
            });
            if churn {
                errs.at(
                    c.cells.span(),
                    "calibration.cells",
                    format!("{cell:?} is a churn cell: it measures no req/s or CPU per request"),
                );
            }
        }
        CalibrationDef {
            service: match &c.service {
                Some(s) => self.service(errs, s, "calibration.service"),
                None => baseline.to_string(),
            },
            cells: c.cells.get_ref().clone(),
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
