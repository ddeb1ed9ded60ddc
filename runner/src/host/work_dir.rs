//! The directory binaries are shipped to on a host, made and checked before anything is
//! copied into it or run from it, the way ssh checks `~/.ssh`: the work_dir and everything
//! in it must be the SSH user's and writable by nobody else; each directory above it must be
//! root's or the user's, and writable by others only with the sticky bit (as `/tmp`), so no
//! other user can rename the work_dir away or put their own in its place.
//!
//! Why: binaries run on the host as the SSH user (root wherever cgroup profiles apply). A
//! directory another user can write lets them swap a binary between its hash check and its
//! execution; in a directory only the SSH user can write, the checked bytes are the ones
//! that run. The default, `~/.cache/pingmatrix`, is made 0700 by the user; a `work_dir`
//! that fails the check is refused with the reason, and nothing is shipped or run there.
//!
//! The checks are a POSIX shell script run on the host (GNU `stat` and `readlink -f`):
//! nothing of ours can run there before the directory is known to be safe.

use std::time::Duration;

use super::ssh::{Remote, quote, run_with_input};

/// `walk PATH N`: every component of PATH, read without following symlinks; the last N are
/// private (the user's, a directory except the last, not a symlink, no group/other write),
/// the first of them the work_dir. Prints `refused <reason>` and exits at the first fault.
const WALK: &str = r#"u=$(id -u)
refuse() { echo "refused $*"; exit 0; }
look() {
  s=$(stat -c '%u %U %f' -- "$1" 2>/dev/null) || refuse "cannot stat $1"
  o=${s%% *}; s=${s#* }; on=${s% *}; m=$((0x${s#* }))
  t=$((m & 0xF000)); mode=$(printf %o $((m & 0xFFF)))
}
parent() {
  look "$1"
  [ "$o" = 0 ] || [ "$o" = "$u" ] ||
    refuse "$1 (above the work_dir) is owned by uid $o ($on), neither root nor the SSH user (uid $u)"
  [ $t = $((0xA000)) ] && return
  [ $((m & 0x12)) = 0 ] || [ $((m & 0x200)) != 0 ] ||
    refuse "$1 (above the work_dir) is writable by group or others without the sticky bit (mode $mode)"
}
private() {
  look "$1"
  [ "$o" = "$u" ] || refuse "$2$1 is owned by uid $o ($on), not by the SSH user (uid $u)"
  [ $t != $((0xA000)) ] || refuse "$2$1 is a symbolic link"
  [ $((m & 0x12)) = 0 ] || refuse "$2$1 is writable by group or others (mode $mode)"
  [ $t = $((0x4000)) ] || [ "$3" = last ] || refuse "$2$1 is not a directory"
}
walk() {
  k=$2; p=
  parent /
  set -f; IFS=/; set -- ${1#/}; unset IFS; set +f
  n=0; for c; do [ -n "$c" ] && n=$((n + 1)); done
  i=0
  for c; do
    [ -n "$c" ] || continue
    i=$((i + 1)); p=$p/$c
    last=; [ $i = $n ] && last=last
    if [ $((n - i)) -ge "$k" ]; then parent "$p"
    elif [ $((n - i + 1)) = "$k" ]; then private "$p" "work_dir " $last
    else private "$p" "" $last
    fi
  done
}
"#;

/// Runs `script` (after [`WALK`]'s functions) on the host: its output but the last line
/// `ok …`, or the reason it printed as `refused …`.
fn guarded(remote: Remote, script: &str) -> Result<String, String> {
    let out = run_with_input(
        remote(&format!("{WALK}{script}")),
        None,
        Duration::from_secs(60),
    )
    .map_err(|e| format!("checking the work_dir failed: {e}"))?;
    match out.lines().last() {
        Some(l) if l.starts_with("ok") => Ok(l.trim_start_matches("ok").trim().to_string()),
        Some(l) if l.starts_with("refused ") => Err(format!(
            "{}; nothing is shipped to or run from it",
            &l["refused ".len()..]
        )),
        _ => Err(format!("unexpected output of the work_dir check: {out:?}")),
    }
}

/// Makes `work_dir` on the host if it is missing (0700; `~/` is the SSH user's home), checks
/// it and the directories above it, and returns its real absolute path. The error is the
/// reason it was refused (the caller names the host).
pub fn prepare(remote: Remote, work_dir: &str) -> Result<String, String> {
    let script = format!(
        r#"d={d}
case $d in '~/'*) d="$HOME/${{d#'~/'}}";; esac
umask 077
[ -e "$d" ] || [ -L "$d" ] || mkdir -p -- "$d" || refuse "cannot make work_dir $d"
r=$(readlink -f -- "$d") || refuse "cannot resolve work_dir $d"
walk "$r" 1
walk "$d" 0
echo "ok $r"
"#,
        d = quote(work_dir)
    );
    guarded(remote, &script)
}

/// The sha256 of `<work_dir>/<rel>` on the host, `None` if there is no such file — after
/// checking that it and the directories between are the SSH user's and writable by nobody
/// else (the error says which is not). `work_dir` is [`prepare`]'s real path.
pub fn checked_sha(
    host: &str,
    remote: Remote,
    work_dir: &str,
    rel: &str,
) -> Result<Option<String>, String> {
    let path = format!("{work_dir}/{rel}");
    let depth = rel.split('/').count() + 1;
    let script = format!(
        r#"f={f}
[ -e "$f" ] || [ -L "$f" ] || {{ echo ok; exit 0; }}
walk "$f" {depth}
echo "ok $(sha256sum -- "$f" | cut -d' ' -f1)"
"#,
        f = quote(&path)
    );
    let sha = guarded(remote, &script).map_err(|e| format!("host {host}: {e}"))?;
    Ok((!sha.is_empty()).then_some(sha))
}

#[cfg(test)]
mod tests {
    use super::super::ssh::local_shell;
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pm-workdir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_missing_work_dir_is_made_private_and_home_relative_is_the_users() {
        let d = scratch("make");
        let w = d.join("a/b");
        let got = prepare(&local_shell, w.to_str().unwrap()).unwrap();
        assert_eq!(got, w.display().to_string());
        assert_eq!(mode(&w), 0o700);
        assert_eq!(mode(&d.join("a")), 0o700);
        let home = |s: &str| {
            let mut c = local_shell(s);
            c.env("HOME", &d);
            c
        };
        let got = prepare(&home, "~/.cache/pingmatrix").unwrap();
        assert_eq!(got, d.join(".cache/pingmatrix").display().to_string());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_work_dir_others_can_write_is_refused_with_the_reason() {
        let d = scratch("open");
        let w = d.join("w");
        std::fs::create_dir(&w).unwrap();
        for (m, shown) in [(0o777, "777"), (0o770, "770"), (0o1777, "1777")] {
            std::fs::set_permissions(&w, std::fs::Permissions::from_mode(m)).unwrap();
            let e = prepare(&local_shell, w.to_str().unwrap()).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "work_dir {} is writable by group or others (mode {shown}); \
                     nothing is shipped to or run from it",
                    w.display()
                )
            );
        }
        // Above the work_dir, a world-writable directory is fine only with the sticky bit.
        std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare(&local_shell, w.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("(above the work_dir) is writable by group or others without the sticky bit (mode 777)"),
            "{e}"
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(prepare(&local_shell, w.to_str().unwrap()).is_ok());
        // A symlink as the work_dir is followed and its target checked.
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(&open, d.join("link")).unwrap();
        let e = prepare(&local_shell, d.join("link").to_str().unwrap()).unwrap_err();
        assert!(
            e.contains(&format!("work_dir {} is writable", open.display())),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_file_in_the_work_dir_is_hashed_only_when_nobody_else_can_write_it() {
        let d = scratch("file");
        let w = prepare(&local_shell, d.join("w").to_str().unwrap()).unwrap();
        assert_eq!(checked_sha("h", &local_shell, &w, "ab/tool"), Ok(None));
        std::fs::create_dir(Path::new(&w).join("ab")).unwrap();
        let f = Path::new(&w).join("ab/tool");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o700)).unwrap();
        // sha256 of "x"
        let x = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
        assert_eq!(
            checked_sha("h", &local_shell, &w, "ab/tool"),
            Ok(Some(x.into()))
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o722)).unwrap();
        let e = checked_sha("h", &local_shell, &w, "ab/tool").unwrap_err();
        let want = format!("{} is writable by group or others (mode 722)", f.display());
        assert!(e.contains(&want), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
