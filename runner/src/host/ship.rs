//! Putting the exact binaries the runner would run onto a host: into
//! `<work_dir>/<sha256 prefix>/<name>`, checked by `sha256sum` on the host after arrival.
//! The work_dir is one only the SSH user can write (`super::work_dir`, checked before
//! anything is shipped), so the bytes checked are the bytes that run. A file already there
//! with the same sha256 is used as is; one whose hash differs is replaced, and one another
//! user could write is refused. Run from the Nix flake, store paths go with
//! `nix copy --to ssh://` instead and keep their store path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use super::ssh::{Remote, quote, run_with_input};
use super::work_dir::checked_sha;
use crate::results::schema::ShippedBinary;

/// The file's sha256, computed once per path and process (several hosts get the same
/// binaries).
pub fn sha256_file(p: &Path) -> Result<String, String> {
    static SEEN: Mutex<BTreeMap<PathBuf, String>> = Mutex::new(BTreeMap::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = seen.get(p) {
        return Ok(h.clone());
    }
    let h = crate::binaries::sha256_file(p)?;
    seen.insert(p.to_path_buf(), h.clone());
    Ok(h)
}

/// The first word of `sha256sum`'s output.
fn remote_sha(remote: Remote, path: &str) -> Option<String> {
    let out = run_with_input(
        remote(&format!("sha256sum {} 2>/dev/null", quote(path))),
        None,
        Duration::from_secs(60),
    )
    .ok()?;
    out.split_whitespace().next().map(str::to_string)
}

/// Ships `local` as `name` to `work_dir` (the real path `super::work_dir::prepare`
/// returned) on the host named `host` and checks it arrived intact. The error names the
/// host, the binary and the cause.
pub fn ship(
    host: &str,
    remote: Remote,
    work_dir: &str,
    name: &str,
    local: &Path,
) -> Result<ShippedBinary, String> {
    let sha = sha256_file(local).map_err(|e| format!("host {host}: {name}: {e}"))?;
    let rel = format!("{}/{name}", &sha[..16]);
    let dir = format!("{work_dir}/{}", &sha[..16]);
    let path = format!("{work_dir}/{rel}");
    let shipped = |via: &str| ShippedBinary {
        local_path: crate::binaries::display_path(local),
        remote_path: path.clone(),
        sha256: sha.clone(),
        via: via.into(),
        verified: true,
    };
    if checked_sha(host, remote, work_dir, &rel)?.as_deref() == Some(sha.as_str()) {
        return Ok(shipped("cached"));
    }
    let bytes = std::fs::read(local).map_err(|e| format!("host {host}: {name}: {e}"))?;
    let tmp = format!("{path}.part");
    let script = format!(
        "umask 077 && mkdir -p {d} && cat > {t} && chmod 700 {t} && mv -f {t} {p}",
        d = quote(&dir),
        t = quote(&tmp),
        p = quote(&path)
    );
    run_with_input(remote(&script), Some(&bytes), Duration::from_secs(600))
        .map_err(|e| format!("host {host}: copying {name} to {path} failed: {e}"))?;
    match checked_sha(host, remote, work_dir, &rel)? {
        Some(got) if got == sha => Ok(shipped("copied")),
        got => {
            let _ = run_with_input(
                remote(&format!("rm -f {}", quote(&path))),
                None,
                Duration::from_secs(30),
            );
            Err(format!(
                "host {host}: {name} arrived with sha256 {} instead of {sha}; removed, not run",
                got.as_deref().unwrap_or("(unreadable)")
            ))
        }
    }
}

/// `nix copy --to ssh://…` of a store path, then the same sha256 check on the host.
pub fn nix_copy(
    host: &str,
    remote: Remote,
    store_uri: &str,
    ssh_opts: &str,
    name: &str,
    local: &Path,
) -> Result<ShippedBinary, String> {
    let sha = sha256_file(local).map_err(|e| format!("host {host}: {name}: {e}"))?;
    let path = local.display().to_string();
    // The store path the binary lives in: /nix/store/<hash>-<name>.
    let store_path: PathBuf = local.components().take(4).collect();
    let mut cmd = Command::new("nix");
    cmd.args(["copy", "--to", store_uri])
        .arg(&store_path)
        .env("NIX_SSHOPTS", ssh_opts);
    run_with_input(cmd, None, Duration::from_secs(600))
        .map_err(|e| format!("host {host}: nix copy of {name} failed: {e}"))?;
    match remote_sha(remote, &path) {
        Some(got) if got == sha => Ok(ShippedBinary {
            local_path: path.clone(),
            remote_path: path,
            sha256: sha,
            via: "nix-copy".into(),
            verified: true,
        }),
        got => Err(format!(
            "host {host}: {name} at {path} has sha256 {} instead of {sha} after nix copy",
            got.as_deref().unwrap_or("(unreadable)")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ssh::local_shell;
    use super::super::work_dir::prepare;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ships_once_then_finds_it_cached_and_refuses_a_corrupted_copy() {
        let dir = std::env::temp_dir().join(format!("pm-ship-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("tool");
        std::fs::write(&src, b"#!/bin/sh\necho hi\n").unwrap();
        let work = prepare(&local_shell, dir.join("remote").to_str().unwrap()).unwrap();
        let work = work.as_str();
        let a = ship("h1", &local_shell, work, "tool", &src).unwrap();
        assert_eq!(a.via, "copied");
        assert!(a.verified);
        assert_eq!(
            std::fs::read(&a.remote_path).unwrap(),
            std::fs::read(&src).unwrap()
        );
        let mode = std::fs::metadata(&a.remote_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o700,
            "only the SSH user may run or change it"
        );
        let b = ship("h1", &local_shell, work, "tool", &src).unwrap();
        assert_eq!(b.via, "cached");
        // A cached file swapped for other bytes: replaced, never taken as cached.
        std::fs::write(&a.remote_path, b"#!/bin/sh\necho swapped\n").unwrap();
        let c = ship("h1", &local_shell, work, "tool", &src).unwrap();
        assert_eq!(c.via, "copied");
        assert_eq!(
            std::fs::read(&c.remote_path).unwrap(),
            std::fs::read(&src).unwrap()
        );
        // A cached file others could write: refused, even with the right bytes.
        std::fs::set_permissions(&a.remote_path, std::fs::Permissions::from_mode(0o766)).unwrap();
        let e = ship("h1", &local_shell, work, "tool", &src).unwrap_err();
        assert!(
            e.contains("is writable by group or others (mode 766)"),
            "{e}"
        );
        std::fs::set_permissions(&a.remote_path, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A transport that changes a byte on the way: refused, named, and removed.
        std::fs::remove_file(&a.remote_path).unwrap();
        let corrupting = |s: &str| local_shell(&s.replace("cat >", "sed s/hi/ho/ >"));
        let e = ship("h2", &corrupting, work, "tool", &src).unwrap_err();
        assert!(e.starts_with("host h2: tool arrived with sha256 "), "{e}");
        assert!(!Path::new(&a.remote_path).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
