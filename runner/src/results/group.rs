//! Cells arranged the way tables and charts show them: one group per (scenario, profile,
//! open or closed loop), services and load levels in first-seen order (the plan's order, so
//! every output lists them alike).

use std::collections::BTreeMap;

use super::schema::{CellResult, CellSummary};

/// The service without a runtime (one edge-triggered epoll loop per core): the per-core
/// ceiling every other service's CPU per request is also shown against.
pub const CEILING: &str = "ping-epoll";

/// The one definition of the ceiling multiple every output shows ("1.38× epoll"): the mean
/// server CPU per request of `c` over the mean of the `ceiling` cell's (the no-runtime
/// service at the same position) — means, as the figures shown beside it are. None for the
/// ceiling itself or where either was not measured.
pub fn ceiling_multiple(c: &CellSummary, ceiling: &CellSummary) -> Option<f64> {
    let cpu = |c: &CellSummary| c.server_cpu_us_per_request.as_ref().map(|s| s.mean);
    match (cpu(c), cpu(ceiling)) {
        (Some(m), Some(b)) if b > 0.0 && c.service != CEILING => Some(m / b),
        _ => None,
    }
}

/// Cells of one (scenario, profile), closed or open loop.
pub struct Group<'a> {
    pub scenario: String,
    pub profile: String,
    pub open: bool,
    pub cells: Vec<&'a CellSummary>,
}

impl<'a> Group<'a> {
    /// Services in first-seen order.
    pub fn services(&self) -> Vec<String> {
        first_seen(self.cells.iter().map(|c| &c.service))
    }

    /// Load level labels in first-seen order.
    pub fn levels(&self) -> Vec<String> {
        first_seen(self.cells.iter().map(|c| &c.level))
    }

    /// Server CPU per request of `c` as a multiple of the no-runtime ceiling's
    /// ([`CEILING`]) at the same level, when both were measured ([`ceiling_multiple`]).
    pub fn ceiling_ratio(&self, c: &CellSummary) -> Option<f64> {
        ceiling_multiple(c, self.cell(CEILING, &c.level)?)
    }

    /// The cell of `service` at `level`, if the group has one.
    pub fn cell(&self, service: &str, level: &str) -> Option<&'a CellSummary> {
        self.cells
            .iter()
            .find(|c| c.service == service && c.level == level)
            .copied()
    }
}

/// Groups in first-seen order.
pub fn groups(cells: &[CellSummary]) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for c in cells {
        let open = c.offered_rate_per_s.is_some();
        match out
            .iter_mut()
            .find(|g| g.scenario == c.scenario && g.profile == c.profile && g.open == open)
        {
            Some(g) => g.cells.push(c),
            None => out.push(Group {
                scenario: c.scenario.clone(),
                profile: c.profile.clone(),
                open,
                cells: vec![c],
            }),
        }
    }
    out
}

/// Distinct values in first-seen order.
pub fn first_seen<'s>(values: impl IntoIterator<Item = &'s String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for x in values {
        if !v.contains(x) {
            v.push(x.clone());
        }
    }
    v
}

/// service → "runtime version / io driver / model" from the first start-up line seen in
/// `cells` (the model as the start-up line spells it: work-stealing, thread-per-core, …).
/// What is said of a server the suite did not write (`command = [...]`): it prints no
/// start-up line, so its runtime, version and I/O driver are not known.
pub const EXTERNAL_RUNTIME: &str = "external: runtime not reported";

pub fn runtimes_by_service<'a>(
    cells: impl IntoIterator<Item = &'a CellResult>,
) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for c in cells {
        if c.cell.external {
            m.entry(c.cell.service.clone())
                .or_insert_with(|| EXTERNAL_RUNTIME.to_string());
        }
        if let Some(b) = &c.startup_line {
            m.entry(c.cell.service.clone()).or_insert_with(|| {
                let model = serde_json::to_value(b.model)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                format!(
                    "{} {} / {} / {model}",
                    b.runtime, b.runtime_version, b.io_driver
                )
            });
        }
    }
    m
}
/// Connections of a closed-loop level named `c<N>` (`c64`, `c64-d8`): N.
pub fn connections(level: &str) -> Option<u32> {
    let digits: String = level
        .strip_prefix('c')?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
