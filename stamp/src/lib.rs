//! The commit every pingmatrix binary was built from, and whether the checkout had
//! uncommitted changes then. [`STAMP`] is the one form that is printed (start-up line,
//! `--version`) and searched for in a binary's bytes ([`find`]), so the runner can tell which
//! source a binary holds without running it.

/// Full commit hash, or "unknown" (no git at build time).
pub const COMMIT: &str = env!("PINGMATRIX_STAMP_COMMIT");
/// "true", "false", or "unknown".
pub const DIRTY: &str = env!("PINGMATRIX_STAMP_DIRTY");

const MARK: &str = "pingmatrix-build commit=";

/// `pingmatrix-build commit=<hash> dirty=<true|false|unknown>;`
pub const STAMP: &str = concat!(
    "pingmatrix-build commit=",
    env!("PINGMATRIX_STAMP_COMMIT"),
    " dirty=",
    env!("PINGMATRIX_STAMP_DIRTY"),
    ";"
);

/// What a stamp says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    pub commit: String,
    /// None when the build could not tell.
    pub dirty: Option<bool>,
}

/// Parses the first stamp in `bytes` (a binary file, or a line that carries one).
pub fn find(bytes: &[u8]) -> Option<Build> {
    let at = bytes
        .windows(MARK.len())
        .position(|w| w == MARK.as_bytes())?;
    let rest = &bytes[at + MARK.len()..];
    let end = rest.iter().position(|&b| b == b';')?;
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    let (commit, dirty) = text.split_once(" dirty=")?;
    Some(Build {
        commit: commit.to_string(),
        dirty: match dirty {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
    })
}

/// This binary's own build.
pub fn own() -> Build {
    find(STAMP.as_bytes()).unwrap_or(Build {
        commit: COMMIT.to_string(),
        dirty: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_is_found_in_surrounding_bytes() {
        let mut bytes = vec![0u8, 7, 255];
        bytes.extend_from_slice(b"pingmatrix-build commit=abc123 dirty=true;");
        bytes.extend_from_slice(&[0, 1, 2]);
        assert_eq!(
            find(&bytes),
            Some(Build {
                commit: "abc123".into(),
                dirty: Some(true)
            })
        );
        assert_eq!(find(b"no stamp here"), None);
        assert_eq!(own().commit, COMMIT);
    }
}
