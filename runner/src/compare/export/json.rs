//! `--format json`: the whole comparison, every sample included, for scripts.

use super::super::model::Comparison;

pub fn render(c: &Comparison) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(c)?;
    s.push('\n');
    Ok(s)
}
