//! A service's whole process tree — the one way the runner holds it, for measuring and for
//! killing: the service's own process, every process in its cgroups (where it has any), and
//! every descendant of those. A server that forks its workers, runs behind `sh -c` or
//! daemonizes is measured and stopped as a whole, not as the one pid the runner started.
//!
//! Descendants that outlive their parent are re-parented to the runner (it is a subreaper,
//! [`super::become_subreaper`]), where [`super::reap_orphans`] finds them; a guardian process
//! ([`super::guard`]) finds every process of the tree by its environment marker if the runner
//! itself is killed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A service's process tree: its first process and the cgroups it was started in.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub leader: u32,
    pub cgroups: Vec<PathBuf>,
}

impl Tree {
    pub fn new(leader: u32, cgroups: Vec<PathBuf>) -> Tree {
        Tree { leader, cgroups }
    }

    /// Every live process of the tree now (sorted): the leader while it exists, the members
    /// of its cgroups, and the descendants of all of them.
    pub fn members(&self) -> Vec<u32> {
        let mut roots: BTreeSet<u32> = self.cgroups.iter().flat_map(|d| cgroup_procs(d)).collect();
        if Path::new(&format!("/proc/{}", self.leader)).exists() {
            roots.insert(self.leader);
        }
        let me = std::process::id();
        roots.remove(&me);
        let mut all = roots.clone();
        all.extend(descendants(&roots.into_iter().collect::<Vec<_>>()));
        all.remove(&me);
        all.into_iter().collect()
    }
}

/// The pids listed in a cgroup's `cgroup.procs` (empty when unreadable).
pub fn cgroup_procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The direct children of `pid`: from `/proc/<pid>/task/*/children` where the kernel has
/// it (cheap: no scan of every process), else from every process's parent in /proc.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(s) => out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok())),
            Err(_) => return scan_children(pid),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Children of `pid` found by reading every process's parent (`/proc/*/stat`).
fn scan_children(pid: u32) -> Vec<u32> {
    super::processes()
        .into_iter()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect()
}

/// Every descendant of `roots` (not the roots themselves), at most 10,000.
pub fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut seen: BTreeSet<u32> = roots.iter().copied().collect();
    let mut out = Vec::new();
    let mut todo: Vec<u32> = roots.to_vec();
    while let Some(p) = todo.pop() {
        for c in children(p) {
            if seen.insert(c) {
                out.push(c);
                todo.push(c);
            }
        }
        if out.len() >= 10_000 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn members_are_the_leader_and_every_descendant_behind_sh_c() {
        // sh stays the parent (`; :`), its child forks a grandchild.
        let mut child = Command::new("sh")
            .args(["-c", "sh -c 'sleep 30 & sleep 30; :' ; :"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let tree = Tree::new(child.id(), vec![]);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut members = tree.members();
        while members.len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            members = tree.members();
        }
        assert!(members.contains(&child.id()));
        // sh, sh, sleep, sleep.
        assert_eq!(members.len(), 4, "{members:?}");
        for p in &members {
            // SAFETY: SIGKILL to processes this test started.
            unsafe { libc::kill(*p as i32, libc::SIGKILL) };
        }
        let _ = child.wait();
        assert!(!tree.members().contains(&child.id()));
    }

    #[test]
    fn cgroup_procs_reads_pids_and_ignores_a_missing_group() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup.procs"), "12\n34\n").unwrap();
        assert_eq!(cgroup_procs(&dir), [12, 34]);
        assert!(cgroup_procs(&dir.join("absent")).is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
