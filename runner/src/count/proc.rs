//! The kernel's per-process counters from /proc: context switches summed over the threads
//! (`/proc/<pid>/task/*/status`; the kernel keeps them per thread), page faults and user /
//! system CPU time of the whole process (`/proc/<pid>/stat`, which keeps exited threads'
//! counts too).

/// One read of a process's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcRead {
    pub t_unix_us: u64,
    pub voluntary_ctx_switches: u64,
    pub involuntary_ctx_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub user_us: f64,
    pub system_us: f64,
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a `status` file.
fn parse_switches(status: &str) -> Option<(u64, u64)> {
    let get = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .parse::<u64>()
            .ok()
    };
    Some((
        get("voluntary_ctxt_switches:")?,
        get("nonvoluntary_ctxt_switches:")?,
    ))
}

/// Reads `pid`'s counters now; `None` once the process is gone.
pub fn read(pid: u32) -> Option<ProcRead> {
    read_of(pid).map(|(_, r)| r)
}

/// [`read`], with the process's start time.
fn read_of(pid: u32) -> Option<(u64, ProcRead)> {
    let stat = crate::process::ProcStat::read(pid)?;
    let (mut vol, mut invol) = (0, 0);
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread that exits between the listing and the read takes its switches along.
        if let Some((v, i)) = std::fs::read_to_string(t.path().join("status"))
            .ok()
            .as_deref()
            .and_then(parse_switches)
        {
            vol += v;
            invol += i;
        }
    }
    Some((
        stat.start,
        ProcRead {
            t_unix_us: crate::sample::now_unix_us(),
            voluntary_ctx_switches: vol,
            involuntary_ctx_switches: invol,
            minor_faults: stat.minor_faults,
            major_faults: stat.major_faults,
            user_us: stat.user_us(),
            system_us: stat.system_us(),
        },
    ))
}

/// Reads of a whole process tree: each counter summed over the members; a member that
/// exits keeps the counts of its last read, so no counter runs backwards. Members are told
/// apart by pid and start time (a reused pid is a new member).
#[derive(Debug, Default)]
pub struct TreeReads {
    tree: crate::process::Tree,
    last: std::collections::BTreeMap<(u32, u64), ProcRead>,
}

impl TreeReads {
    pub fn new(tree: crate::process::Tree) -> TreeReads {
        TreeReads {
            tree,
            last: Default::default(),
        }
    }

    /// The tree's counters now; None once no member is left.
    pub fn read(&mut self) -> Option<ProcRead> {
        let mut at = None;
        for pid in self.tree.members() {
            if let Some((start, r)) = read_of(pid) {
                at = Some(r.t_unix_us);
                self.last.insert((pid, start), r);
            }
        }
        let mut sum = ProcRead {
            t_unix_us: at?,
            ..ProcRead::default()
        };
        for r in self.last.values() {
            sum.voluntary_ctx_switches += r.voluntary_ctx_switches;
            sum.involuntary_ctx_switches += r.involuntary_ctx_switches;
            sum.minor_faults += r.minor_faults;
            sum.major_faults += r.major_faults;
            sum.user_us += r.user_us;
            sum.system_us += r.system_us;
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_switches() {
        let s = "Name:\tx\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_switches(s), Some((17, 3)));
        assert_eq!(parse_switches("Name:\tx\n"), None);
    }

    #[test]
    fn reads_itself_and_sees_faults_grow() {
        let a = read(std::process::id()).unwrap();
        // Touch 1,000 fresh pages: at least that many minor faults.
        let mut v = vec![0u8; 1000 * 4096 + 4096];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let b = read(std::process::id()).unwrap();
        assert!(b.minor_faults - a.minor_faults >= 1000, "{a:?} {b:?}");
        assert!(b.voluntary_ctx_switches + b.involuntary_ctx_switches > 0);
    }

    #[test]
    fn a_missing_process_reads_none() {
        assert_eq!(read(u32::MAX - 1), None);
    }
}
