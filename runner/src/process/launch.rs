//! Starting a service the way `posix_spawn` does — `clone(CLONE_VM | CLONE_VFORK)` — rather
//! than `fork`, with the runner's own steps between clone and exec (process group, stdio,
//! confinement, parent-death signal) and the child's clock read as the last step before
//! `execve`.
//!
//! Why not fork: a forked child holds a copy of the runner's address space, and its `execve`
//! must tear that copy down before the new image runs. That happens after the child's clock
//! was read, so it counted as the service's start-up: about 0.3–0.4 ms per start here (the
//! runner's execve took 0.46–0.56 ms where the same binary's took 0.13–0.19 ms from a
//! `posix_spawn`), and it grew with the runner's memory, not with anything the service did.
//! A child sharing the runner's memory has nothing to tear down: its execve costs what any
//! launcher's does.
//!
//! Sharing memory means the child must not allocate, lock or unwind: everything it needs is
//! prepared before the clone, it runs on its own stack, and the calling thread is suspended
//! until the exec (or the child's exit). Signals are blocked across the clone and every
//! caught signal is reset to its default in the child before anything is unblocked, so no
//! runner handler can run there.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::limits::ChildSetup;

/// What the child needs, all prepared before the clone; the child writes `stamp_ns` and
/// `errno` back (the parent reads them once the clone returned — after the exec or exit).
struct Shared<'a> {
    path: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    stdin: libc::c_int,
    stdout: libc::c_int,
    stderr: libc::c_int,
    setup: &'a ChildSetup,
    stamp_ns: u64,
    errno: libc::c_int,
}

/// A launched child: its pid and its own clock just before `execve` (CLOCK_MONOTONIC, ns).
#[derive(Debug)]
pub struct Launched {
    pub pid: u32,
    pub exec_at_ns: u64,
}

/// Why a launch failed: the clone itself, or the child (its setup or the exec).
#[derive(Debug)]
pub enum Failed {
    Clone(io::Error),
    Child(io::Error),
}

impl Failed {
    /// The clone was refused (a sandbox's seccomp filter, an old kernel): the caller can
    /// fall back to fork and say so.
    pub fn refused(&self) -> bool {
        matches!(self, Failed::Clone(e) if matches!(
            e.raw_os_error(),
            Some(libc::EPERM | libc::ENOSYS | libc::EINVAL)
        ))
    }
}

impl From<Failed> for io::Error {
    fn from(f: Failed) -> io::Error {
        match f {
            Failed::Clone(e) | Failed::Child(e) => e,
        }
    }
}

/// Size of the child's stack: it runs a few plain frames (signal reset, dup2, cgroup
/// writes, execve); generous next to that, yet small enough to come from the heap rather
/// than its own mapping (whose unmapping would flush TLBs on the service's CPU).
const STACK: usize = 64 * 1024;

/// Starts `program` with `args` and the runner's environment, `marks` set in it (or
/// replacing the runner's own: [`super::guard::service_env`]), stdin/stdout/stderr on the
/// given fds, `setup` applied in the child. Returns once the child has exec'd; a failure in
/// the child (setup or exec) comes back as its errno, the child reaped.
pub fn launch(
    program: &Path,
    args: &[OsString],
    marks: &[(&str, String)],
    (stdin, stdout, stderr): (&OwnedFd, &OwnedFd, &OwnedFd),
    setup: &ChildSetup,
) -> Result<Launched, Failed> {
    let path =
        cstring(resolve(program).map_err(Failed::Child)?.as_os_str()).map_err(Failed::Child)?;
    let argv_owned = std::iter::once(program.as_os_str())
        .chain(args.iter().map(OsString::as_os_str))
        .map(cstring)
        .collect::<io::Result<Vec<_>>>()
        .map_err(Failed::Child)?;
    // The runner's environment, marked: every process of the service's tree inherits the
    // marks, by which the runner finds its orphans and the guardian finds them all if the
    // runner is killed (`super::guard`).
    let env_owned = std::env::vars_os()
        .filter(|(k, _)| !marks.iter().any(|(m, _)| k == m))
        .chain(marks.iter().map(|(k, v)| (k.into(), v.into())))
        .map(|(k, v)| {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            cstring(&kv)
        })
        .collect::<io::Result<Vec<_>>>()
        .map_err(Failed::Child)?;
    let nul_terminated = |v: &[CString]| {
        v.iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    };
    let mut shared = Shared {
        argv: nul_terminated(&argv_owned),
        envp: nul_terminated(&env_owned),
        path,
        stdin: stdin.as_raw_fd(),
        stdout: stdout.as_raw_fd(),
        stderr: stderr.as_raw_fd(),
        setup,
        stamp_ns: 0,
        errno: 0,
    };
    let mut stack = vec![0u8; STACK];
    // The stack grows down from its (16-byte aligned) top.
    let top = (stack.as_mut_ptr() as usize + STACK) & !15;

    // SAFETY: every signal is blocked across the clone so none is handled on the child's
    // stack before the child resets the handlers; the old mask comes back right after.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: CLONE_VFORK suspends this thread until the child exec'd or exited, so `shared`
    // and `stack` outlive every use the child makes of them; the child only makes
    // async-signal-safe calls on data prepared above.
    let pid = unsafe {
        libc::clone(
            child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut shared).cast(),
        )
    };
    let clone_err = io::Error::last_os_error();
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(Failed::Clone(clone_err));
    }
    // SAFETY: the child has exec'd or exited: nothing writes `shared` any more.
    let (errno, stamp_ns) = unsafe {
        (
            std::ptr::read_volatile(&shared.errno),
            std::ptr::read_volatile(&shared.stamp_ns),
        )
    };
    if errno != 0 {
        // SAFETY: reaping our own child, which has exited (_exit after the failure).
        unsafe {
            let mut st = 0;
            while libc::waitpid(pid, &mut st, 0) < 0
                && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
            {}
        }
        return Err(Failed::Child(io::Error::from_raw_os_error(errno)));
    }
    Ok(Launched {
        pid: pid as u32,
        exec_at_ns: stamp_ns,
    })
}

/// The child, on its own stack in the runner's memory: reset signals, stdio, process group,
/// confinement, clock, execve. Never returns: exec or `_exit(127)` with `errno` set.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Shared`, alive while the parent is suspended; only
    // async-signal-safe calls follow, nothing allocates or unwinds.
    unsafe {
        let s = &mut *arg.cast::<Shared>();
        // Handlers would run the runner's code on shared memory: back to default. SIGPIPE,
        // which Rust programs ignore, is reset too, as `std::process::Command` does.
        for sig in 1..=64 {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut sa) != 0 {
                continue;
            }
            if sig == libc::SIGPIPE
                || (sa.sa_sigaction != libc::SIG_IGN && sa.sa_sigaction != libc::SIG_DFL)
            {
                sa.sa_sigaction = libc::SIG_DFL;
                sa.sa_flags = 0;
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        for (fd, to) in [(s.stdin, 0), (s.stdout, 1), (s.stderr, 2)] {
            // dup2 onto itself would keep close-on-exec: clear it instead.
            let r = if fd == to {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, to)
            };
            if r < 0 {
                fail(s);
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail(s);
        }
        if s.setup.apply().is_err() {
            fail(s);
        }
        // As `Command` leaves it: nothing blocked.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        std::ptr::write_volatile(
            &mut s.stamp_ns,
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
        );
        libc::execve(s.path.as_ptr(), s.argv.as_ptr(), s.envp.as_ptr());
        fail(s)
    }
}

/// Records the child's errno for the parent and exits without running any of the runner's
/// exit code (the memory is the runner's).
unsafe fn fail(s: &mut Shared) -> ! {
    // SAFETY: errno of this (shared) thread slot; the parent reads `errno` after the exit.
    unsafe {
        std::ptr::write_volatile(&mut s.errno, (*libc::__errno_location()).max(1));
        libc::_exit(127)
    }
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} holds a NUL byte"),
        )
    })
}

/// `program` as given when it names a path, else the first executable match on PATH (as
/// `Command` would search it).
fn resolve(program: &Path) -> io::Result<PathBuf> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Ok(program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            let Ok(c) = cstring(p.as_os_str()) else {
                return false;
            };
            // SAFETY: access(2) on a NUL-terminated path.
            unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} not found on PATH", program.display()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refused_clone_is_a_reason_to_fork_instead() {
        let os = io::Error::from_raw_os_error;
        assert!(Failed::Clone(os(libc::EPERM)).refused());
        assert!(Failed::Clone(os(libc::ENOSYS)).refused());
        // Out of processes or memory: forking would not help.
        assert!(!Failed::Clone(os(libc::EAGAIN)).refused());
        // The child's own failure (a cgroup write, the exec) is the service's error.
        assert!(!Failed::Child(os(libc::EPERM)).refused());
    }

    #[test]
    fn programs_without_a_slash_are_searched_on_path() {
        assert!(resolve(Path::new("sh")).unwrap().is_absolute());
        assert_eq!(
            resolve(Path::new("./x")).unwrap(),
            PathBuf::from("./x"),
            "a path is used as given"
        );
        assert!(resolve(Path::new("pingmatrix-no-such-program")).is_err());
    }
}
