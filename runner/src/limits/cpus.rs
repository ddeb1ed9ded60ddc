//! CPU lists ("0", "0-3", "0,2-3"): parsing, printing, which CPUs this process may use, and
//! the affinity mask a child is pinned with.

use nix::sched::CpuSet;

/// Parses a Linux-style CPU list into sorted, unique CPU numbers.
pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty entry in CPU list {s:?}"));
        }
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: u32 = a
            .parse()
            .map_err(|_| format!("{a:?} is not a CPU number (in {s:?})"))?;
        let b: u32 = b
            .parse()
            .map_err(|_| format!("{b:?} is not a CPU number (in {s:?})"))?;
        if b < a {
            return Err(format!("range {part:?} runs backwards"));
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Compact form: [0,1,2,5] → "0-2,5".
pub fn format_cpus(cpus: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// CPUs in this process's affinity mask (what a child may be pinned to); the services and
/// loadgen read theirs the same way.
pub fn allowed_cpus() -> Vec<u32> {
    ping_common::cpus::allowed_cpus()
        .into_iter()
        .map(|c| c as u32)
        .collect()
}

/// Runs `f` with the calling thread pinned to `cpus` (all allowed CPUs when empty), then
/// puts the thread's previous mask back.
pub fn on_cpus<T>(cpus: &[u32], f: impl FnOnce() -> T) -> T {
    use nix::sched::{sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    let me = Pid::from_raw(0);
    let before = sched_getaffinity(me).ok();
    if !cpus.is_empty() {
        let _ = sched_setaffinity(me, &cpu_set(cpus));
    }
    let out = f();
    if let Some(b) = before {
        let _ = sched_setaffinity(me, &b);
    }
    out
}

/// The affinity mask for `sched_setaffinity`; CPUs beyond the mask's size are left out.
pub fn cpu_set(cpus: &[u32]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus {
        let _ = set.set(c as usize);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_cpus("0").unwrap(), vec![0]);
        assert_eq!(parse_cpus("0-2,5, 1").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpus("2-1").is_err());
        assert!(parse_cpus("a").is_err());
        assert!(parse_cpus("0,,1").is_err());
        assert!(parse_cpus("").is_err());
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format_cpus(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(format_cpus(&[3]), "3");
    }

    #[test]
    fn allowed_cpus_non_empty() {
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn on_cpus_pins_only_for_the_call() {
        let all = allowed_cpus();
        let first = all[0];
        let inside = on_cpus(&[first], allowed_cpus);
        assert_eq!(inside, vec![first]);
        assert_eq!(allowed_cpus(), all);
    }

    #[test]
    fn cpu_set_holds_exactly_the_listed_cpus() {
        let set = cpu_set(&[0, 2, 100_000]);
        assert_eq!(set.is_set(0), Ok(true));
        assert_eq!(set.is_set(1), Ok(false));
        assert_eq!(set.is_set(2), Ok(true));
    }
}
