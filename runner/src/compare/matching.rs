//! Pairing cells of two result sets by their identity (service, scenario, load level,
//! profile), keeping the new side's order, and listing the cells present on one side only.

use serde::Serialize;

use crate::results::schema::CellSummary;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellId {
    pub service: String,
    pub scenario: String,
    pub level: String,
    pub profile: String,
}

impl CellId {
    pub fn of(c: &CellSummary) -> CellId {
        CellId {
            service: c.service.clone(),
            scenario: c.scenario.clone(),
            level: c.level.clone(),
            profile: c.profile.clone(),
        }
    }
}

impl std::fmt::Display for CellId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} · {} · {} · {}",
            self.service, self.scenario, self.level, self.profile
        )
    }
}

pub struct Matched<'a> {
    pub pairs: Vec<(&'a CellSummary, &'a CellSummary)>,
    pub only_old: Vec<CellId>,
    pub only_new: Vec<CellId>,
}

pub fn match_cells<'a>(old: &'a [CellSummary], new: &'a [CellSummary]) -> Matched<'a> {
    let find = |side: &'a [CellSummary], id: &CellId| side.iter().find(|c| &CellId::of(c) == id);
    let mut pairs = Vec::new();
    let mut only_new = Vec::new();
    for n in new {
        let id = CellId::of(n);
        match find(old, &id) {
            Some(o) => pairs.push((o, n)),
            None => only_new.push(id),
        }
    }
    let only_old = old
        .iter()
        .map(CellId::of)
        .filter(|id| find(new, id).is_none())
        .collect();
    Matched {
        pairs,
        only_old,
        only_new,
    }
}
