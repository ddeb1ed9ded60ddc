//! The service's start-up JSON line (runtime, driver, workers, declared deviations).

use std::time::{Duration, Instant};

use crate::process::Proc;
use crate::results::schema::{Banner, Deviation};

/// Waits up to `timeout` for the first stdout line and parses it.
pub fn read(proc: &Proc, timeout: Duration) -> Result<Banner, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match proc.stdout_lines.try_recv() {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => return parse(&line),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                return Err("stdout closed without a start-up line".into());
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no start-up line on stdout within {} ms",
                timeout.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn parse(line: &str) -> Result<Banner, String> {
    let raw: serde_json::Value = serde_json::from_str(line.trim())
        .map_err(|e| format!("start-up line is not JSON ({e}): {:?}", truncate(line)))?;
    let s = |k: &str| raw.get(k).and_then(|v| v.as_str()).map(String::from);
    let deviations = raw
        .get("deviations")
        .and_then(|d| d.as_array())
        .map(|a| {
            a.iter()
                .map(|d| Deviation {
                    id: d
                        .get("id")
                        .and_then(|v| v.as_str())
                        .unwrap_or("?")
                        .to_string(),
                    detail: d
                        .get("detail")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Banner {
        service: s("service"),
        runtime: s("runtime"),
        runtime_version: s("runtime_version"),
        model: s("model"),
        io_driver: s("io_driver"),
        workers: raw.get("workers").and_then(|v| v.as_u64()),
        listen: s("listen"),
        deviations,
        raw,
    })
}

fn truncate(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_contract_line() {
        let b = parse(r#"{"service":"ping-monoio","runtime":"monoio","runtime_version":"0.2.4","model":"thread-per-core","workers":2,"io_driver":"io_uring","pid":1,"listen":"127.0.0.1:1","deviations":[{"id":"x","detail":"y"}]}"#).unwrap();
        assert_eq!(b.io_driver.as_deref(), Some("io_uring"));
        assert_eq!(b.workers, Some(2));
        assert_eq!(b.deviations[0].id, "x");
        assert!(parse("listening on 1234").is_err());
    }
}
