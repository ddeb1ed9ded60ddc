//! What each profile of a run does to the server, in words: its CPUs, its CPU quota and
//! memory limit from the matrix file the run recorded, and what a quota does to the
//! numbers. Shown where results.md and the page show profiles: a reader of "k8s-small" must
//! not have to find the matrix file to learn that 80 ms tails are the quota's doing.

use std::fmt::Write as _;

use crate::config::schema::MatrixFile;
use crate::limits::PERIOD_US;

/// (profile, its description) for every profile of the recorded matrix file, in its order;
/// empty when the file does not parse as this version's matrix (an older run).
pub fn describe(config_toml: &str) -> Vec<(String, String)> {
    let Ok(m) = toml::from_str::<MatrixFile>(config_toml) else {
        return Vec::new();
    };
    m.profiles
        .iter()
        .map(|p| {
            let mut d = format!(
                "server pinned to CPU {}, load generator to CPU {}",
                p.server_cpus.get_ref(),
                p.loadgen_cpus.get_ref()
            );
            if let Some(w) = &p.workers {
                let _ = write!(d, ", {} workers", w.get_ref());
            }
            let quota = p.cpu_quota.as_ref().map(|q| *q.get_ref());
            let mem = p.memory_max_mib.as_ref().map(|m| *m.get_ref());
            match quota {
                Some(q) => {
                    let period_ms = PERIOD_US as f64 / 1000.0;
                    let _ = write!(
                        d,
                        "; CPU quota {q} CPU (the server may run {} ms of every {period_ms:.0} ms period, then waits for the next: a request that arrives once the quota is spent waits up to {} ms, so tail latencies of tens of ms are this throttling, and req/s is capped near {q} × what one CPU serves)",
                        fmt_ms(q * period_ms),
                        fmt_ms((1.0 - q).max(0.0) * period_ms)
                    );
                }
                None => d.push_str("; no CPU quota"),
            }
            match mem {
                Some(m) => {
                    let _ = write!(
                        d,
                        "; memory limit {m} MiB (a service above it is reclaimed from, then killed)"
                    );
                }
                None => d.push_str("; no memory limit"),
            }
            if quota.is_none() && mem.is_none() {
                d.push_str(": the numbers are the pinned CPU's own");
            }
            (p.name.get_ref().clone(), d)
        })
        .collect()
}

fn fmt_ms(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// results.md's "Profiles" section: one line per profile the run's cells used.
pub fn section(o: &mut String, config_toml: &str, used: &[String]) {
    let all = describe(config_toml);
    let shown: Vec<&(String, String)> = all.iter().filter(|(n, _)| used.contains(n)).collect();
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Profiles\n");
    for (name, d) in shown {
        let _ = writeln!(o, "- **{name}**: {d}.");
    }
    let _ = writeln!(o);
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = r#"
[[services]]
name = "ping-epoll"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [1] }

[[profiles]]
name = "pinned"
server_cpus = "0"
loadgen_cpus = "1"

[[profiles]]
name = "k8s-small"
server_cpus = "0"
loadgen_cpus = "1"
cpu_quota = 0.2
memory_max_mib = 400
"#;

    #[test]
    fn a_quota_is_explained_with_what_it_does() {
        let d = describe(TOML);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].1.contains("no CPU quota") && d[0].1.contains("pinned CPU's own"),
            "{}",
            d[0].1
        );
        let k = &d[1].1;
        assert!(
            k.contains("CPU quota 0.2 CPU") && k.contains("20 ms of every 100 ms"),
            "{k}"
        );
        assert!(
            k.contains("waits up to 80 ms") && k.contains("memory limit 400 MiB"),
            "{k}"
        );
        let mut o = String::new();
        section(&mut o, TOML, &["k8s-small".to_string()]);
        assert!(
            o.starts_with("## Profiles\n")
                && o.contains("**k8s-small**")
                && !o.contains("**pinned**"),
            "{o}"
        );
    }

    #[test]
    fn an_unreadable_matrix_file_gives_no_section() {
        let mut o = String::new();
        section(&mut o, "not toml [", &["pinned".to_string()]);
        assert!(o.is_empty());
    }
}
