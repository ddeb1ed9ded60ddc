//! The system OpenSSH client, one multiplexed connection per host: a master (`ssh -M -N`)
//! owned by the runner, and every remote command a client over its control socket.
//! BatchMode (never a password prompt), ConnectTimeout and keep-alives bound every wait.
//!
//! The master and every client die with the runner (parent-death signal), so a runner
//! killed with SIGKILL closes all SSH sessions; the remote agent sees its stdin close and
//! kills what it started (`crate::agent`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::HostDef;

/// Seconds ssh waits for the TCP connection.
pub const CONNECT_TIMEOUT_S: u64 = 5;

/// How to run a shell command line on a host (ssh, or a stand-in in tests).
pub type Remote<'a> = &'a dyn Fn(&str) -> Command;

/// Quotes `s` for a POSIX shell (the remote side of `ssh host -- cmd` is a shell).
pub fn quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Makes `cmd` die with the runner (SIGTERM when the runner's thread that spawned it exits)
/// and puts it in its own process group, so the terminal's Ctrl-C reaches only the runner,
/// which then closes the sessions in order.
pub fn tie_to_runner(cmd: &mut Command) {
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe and takes plain integers.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// An open, multiplexed SSH connection to one host.
pub struct Ssh {
    pub host: HostDef,
    control: PathBuf,
    master: Option<Child>,
}

impl Ssh {
    /// Opens the master connection and waits until it can carry sessions. The error says
    /// why in ssh's words (refused connection, unknown host key, refused key, timeout).
    pub fn connect(host: &HostDef) -> Result<Ssh, String> {
        let control =
            std::env::temp_dir().join(format!("pm-ssh-{}-{}.sock", std::process::id(), host.name));
        let _ = std::fs::remove_file(&control);
        let mut ssh = Ssh {
            host: host.clone(),
            control,
            master: None,
        };
        let mut cmd = Command::new("ssh");
        cmd.args(ssh.options())
            .args(["-M", "-N", "-o", "ControlPersist=no"])
            .arg(host.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        tie_to_runner(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run ssh: {e} (is the OpenSSH client installed?)"))?;
        let deadline = Instant::now() + Duration::from_secs(CONNECT_TIMEOUT_S + 10);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return Err(format!(
                    "ssh {} failed ({st}): {}",
                    host.destination(),
                    one_line(&err)
                ));
            }
            if ssh.control.exists() && ssh.check() {
                break;
            }
            if Instant::now() >= deadline || crate::interrupt::requested() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "ssh {}: no connection within {} s",
                    host.destination(),
                    CONNECT_TIMEOUT_S + 10
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        ssh.master = Some(child);
        Ok(ssh)
    }

    /// Options every ssh invocation for this host shares.
    fn options(&self) -> Vec<String> {
        let h = &self.host;
        let mut o: Vec<String> = [
            "BatchMode=yes".to_string(),
            format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
            "ServerAliveInterval=2".into(),
            "ServerAliveCountMax=3".into(),
            format!("ControlPath={}", self.control.display()),
        ]
        .into_iter()
        .flat_map(|x| ["-o".to_string(), x])
        .collect();
        if let Some(p) = h.port {
            o.extend(["-p".into(), p.to_string()]);
        }
        if let Some(i) = &h.identity_file {
            o.extend(["-i".into(), i.display().to_string()]);
            o.extend(["-o".into(), "IdentitiesOnly=yes".into()]);
        }
        for x in &h.ssh_options {
            o.extend(["-o".into(), x.clone()]);
        }
        o
    }

    /// `ssh -O check`: the master is up.
    fn check(&self) -> bool {
        Command::new("ssh")
            .args(self.options())
            .args(["-O", "check"])
            .arg(self.host.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// `remote` (a shell command line) run on the host over the master connection.
    pub fn command(&self, remote: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(self.options())
            .args(["-o", "ControlMaster=no", "-T"])
            .arg(self.host.destination())
            .arg("--")
            .arg(remote);
        tie_to_runner(&mut cmd);
        cmd
    }

    /// The `ssh` command line without the remote part, for `nix copy`'s NIX_SSHOPTS.
    pub fn options_line(&self) -> String {
        self.options()
            .iter()
            .map(|o| quote(o))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs `remote` to completion (stdin from `input`), within `timeout`: its stdout, or
    /// an error with its stderr.
    pub fn run(
        &self,
        remote: &str,
        input: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<String, String> {
        run_with_input(self.command(remote), input, timeout)
    }
}

/// Runs `cmd` with `input` on stdin, for at most `timeout`: its stdout on success, else its
/// status and stderr.
pub fn run_with_input(
    mut cmd: Command,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<String, String> {
    use std::io::Write;
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let readers = (
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        }),
    );
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if Instant::now() >= deadline || crate::interrupt::requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no answer within {} s", timeout.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = String::from_utf8_lossy(&readers.0.join().unwrap_or_default()).to_string();
    let err = String::from_utf8_lossy(&readers.1.join().unwrap_or_default()).to_string();
    if status.success() {
        Ok(out)
    } else {
        Err(format!("exited with {status}: {}", one_line(&err)))
    }
}

/// Several lines of ssh's stderr as one.
pub fn one_line(s: &str) -> String {
    let t: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if t.is_empty() {
        "(no message)".into()
    } else {
        t.join(" | ")
    }
}

impl Drop for Ssh {
    fn drop(&mut self) {
        if let Some(mut m) = self.master.take() {
            let _ = Command::new("ssh")
                .args(self.options())
                .args(["-O", "exit"])
                .arg(self.host.destination())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + Duration::from_secs(2);
            while !matches!(m.try_wait(), Ok(Some(_))) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = m.kill();
            let _ = m.wait();
        }
        let _ = std::fs::remove_file(&self.control);
    }
}

/// `sh -c script` on this machine: the host stand-in of unit tests.
#[cfg(test)]
pub fn local_shell(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    c
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting_leaves_plain_words_and_wraps_the_rest() {
        assert_eq!(
            quote("/tmp/pingmatrix/ab/matrix"),
            "/tmp/pingmatrix/ab/matrix"
        );
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
