//! What a variant's error messages quote of the commands it ran (cargo, git, tar): one
//! helper that source, patch and build share, below all three.

/// The last lines of a command's output: what an error message quotes.
pub(super) fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}
