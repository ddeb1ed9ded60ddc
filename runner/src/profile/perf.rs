//! Driving the `perf` binary: probing what it may do here, `perf record -p` for a window,
//! `perf script` into the folder.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::fold::{flamegraph_svg, fold_perf_script_from, sample_count};
use super::{Error, NotAvailable, Options, Profile, ProfileRecord};

/// How long `perf record` may take to write its data after SIGINT.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long any perf may take to attach and get going — `perf record` to enable its events,
/// `perf stat -I` to print its first interval; the load waits for it, since a busy machine
/// can take longer than a short window to get perf going.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Control fds handed to `perf record --control fd:CTL,ACK`, moved this high so that no
/// descriptor of the child's stdio can be in the way.
const CONTROL_FD_MIN: libc::c_int = 200;

/// perf as it can be used on this machine: found, allowed, with the event to sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Perf {
    program: PathBuf,
    /// `perf version` output, e.g. `perf version 6.1.187`.
    pub version: String,
    /// The event to sample: `cycles` with hardware counters, else `cpu-clock`; `:u` appended
    /// when only user space may be sampled.
    pub event: String,
    pub hardware_counters: bool,
    /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// `perf record` takes `--control` and `-D -1` (perf 5.10+): it starts disabled and says
    /// when its events are on, so no load goes unsampled while perf attaches.
    pub control: bool,
}

/// A running `perf record -p <pid>`; [`Recording::stop`] ends it. Dropping it kills perf.
#[derive(Debug)]
pub struct Recording {
    perf: Perf,
    child: Option<Child>,
    pid: u32,
    options: Options,
    dir: PathBuf,
    name: String,
    started: Instant,
    /// perf's control pipe (write end) and its acknowledgements (read end), held until perf
    /// exits.
    control: Option<(File, File)>,
}

fn not_available(reason: impl Into<String>) -> NotAvailable {
    NotAvailable {
        reason: reason.into(),
    }
}

/// The lines of perf's stderr worth quoting: its error, without the advice paragraphs.
fn perf_complaint(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    if lines.is_empty() {
        "no message".to_owned()
    } else {
        lines.join(" / ")
    }
}

/// Whether perf's stderr says the kernel refused it (as opposed to perf failing).
fn is_refusal(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr).to_lowercase();
    [
        "permission denied",
        "operation not permitted",
        "eacces",
        "eperm",
        "perf_event_paranoid",
        "no permission",
        "not supported",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// The unit of folded counts: inferno weights each sample by its period, which is
/// nanoseconds of CPU time for `cpu-clock` and cycles for `cycles`.
pub fn weight_unit(event: &str) -> &'static str {
    if event.starts_with("cpu-clock") || event.starts_with("task-clock") {
        "ns"
    } else if event.starts_with("cycles") {
        "cycles"
    } else {
        "events"
    }
}

/// The sample count in perf record's closing line:
/// `[ perf record: Captured and wrote 0.015 MB perf.data (196 samples) ]`.
fn samples_written(stderr: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("perf record: Captured"))?;
    let (_, tail) = line.rsplit_once('(')?;
    tail.split_whitespace().next()?.parse().ok()
}

/// Environment variable naming the perf binary (default `perf` from PATH). Tests name a
/// stand-in, or a missing file to exercise the "not available" path.
pub const PERF_ENV: &str = "PINGMATRIX_PERF";

/// The perf every count, recording and profile runs: `$PINGMATRIX_PERF`, else `perf` from
/// PATH.
pub fn program() -> std::ffi::OsString {
    std::env::var_os(PERF_ENV).unwrap_or_else(|| "perf".into())
}

/// The one spawner of perf (`program`, [`program`] or a test's stand-in), for every count,
/// recording, probe and `perf script`: stdin closed, and the runner's marker in its
/// environment, so the guardian kills it with the services should the runner itself be
/// killed mid-count.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.stdin(Stdio::null()).env(
        crate::process::guard::RUNNER_ENV,
        crate::process::guard::marker(),
    );
    c
}

impl Perf {
    /// The perf every count runs too ([`program`]); see [`Perf::probe_with`].
    pub fn probe() -> Result<Perf, NotAvailable> {
        Perf::probe_with(program())
    }

    /// Checks that `program` is a working perf that may sample here, picks the event
    /// (hardware `cycles` if counters exist, else software `cpu-clock`) and tries one tiny
    /// recording with a call graph, so that a kernel refusal shows here and not mid-run.
    pub fn probe_with(program: impl Into<PathBuf>) -> Result<Perf, NotAvailable> {
        let program = program.into();
        let version = command(&program).arg("version").output().map_err(|e| {
            not_available(format!(
                "cannot run {}: {e} (Debian: apt-get install linux-perf)",
                program.display()
            ))
        })?;
        if !version.status.success() {
            return Err(not_available(format!(
                "`{} version` failed: {}",
                program.display(),
                perf_complaint(&version.stderr)
            )));
        }
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();

        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        // SAFETY: geteuid has no preconditions and cannot fail.
        let privileged = unsafe { libc::geteuid() } == 0;
        if !privileged && paranoid.is_some_and(|p| p >= 3) {
            return Err(not_available(format!(
                "kernel.perf_event_paranoid = {} forbids perf_event_open for unprivileged users \
                 (lower it to 2, or run as root / with CAP_PERFMON)",
                paranoid.unwrap_or_default()
            )));
        }

        // `perf stat -x,` prints `<not supported>` in the value field without a PMU.
        let stat = command(&program)
            .args(["stat", "-x,", "-e", "cycles", "--", "true"])
            .stdout(Stdio::null())
            .output()
            .map_err(|e| not_available(format!("cannot run perf stat: {e}")))?;
        let hardware_counters = stat.status.success()
            && String::from_utf8_lossy(&stat.stderr).lines().any(|l| {
                l.contains("cycles")
                    && l.split(',')
                        .next()
                        .is_some_and(|v| v.trim().parse::<u64>().is_ok())
            });
        let mut event = if hardware_counters {
            "cycles"
        } else {
            "cpu-clock"
        }
        .to_owned();
        if !privileged && paranoid.is_some_and(|p| p >= 2) {
            event.push_str(":u");
        }

        // `perf record -h` prints its usage (exit status 129) with every option it knows.
        let control = command(&program)
            .args(["record", "-h"])
            .output()
            .is_ok_and(|o| {
                let text = [o.stdout, o.stderr].concat();
                String::from_utf8_lossy(&text).contains("--control")
            });
        let perf = Perf {
            program,
            version,
            event,
            hardware_counters,
            paranoid,
            control,
        };
        perf.trial()?;
        Ok(perf)
    }

    /// One recording of `true`, with a DWARF call graph, thrown away.
    fn trial(&self) -> Result<(), NotAvailable> {
        let data =
            std::env::temp_dir().join(format!("pingmatrix-perf-probe-{}.data", std::process::id()));
        let out = command(&self.program)
            .args(["record", "-q", "--no-buildid-cache", "-e", &self.event])
            .args(["--call-graph", "dwarf", "-o"])
            .arg(&data)
            .args(["--", "true"])
            .stdout(Stdio::null())
            .output();
        let _ = std::fs::remove_file(&data);
        let out = out.map_err(|e| not_available(format!("cannot run perf record: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(not_available(format!(
                "perf record -e {} refused (perf_event_paranoid = {}): {}",
                self.event,
                self.paranoid
                    .map_or("unknown".to_owned(), |p| p.to_string()),
                perf_complaint(&out.stderr)
            )))
        }
    }

    /// Starts `perf record` on `pid` and all its threads, sampling at once. Outputs go to
    /// `dir/<name>.*`.
    pub fn start(
        &self,
        pid: u32,
        options: &Options,
        dir: &Path,
        name: &str,
    ) -> Result<Recording, Error> {
        let mut rec = self.start_paused(pid, options, dir, name)?;
        rec.enable();
        Ok(rec)
    }

    /// Starts `perf record` with its events disabled where perf takes `--control`, so its
    /// 60–300 ms attach can happen before the window that [`Recording::enable`] opens.
    pub fn start_paused(
        &self,
        pid: u32,
        options: &Options,
        dir: &Path,
        name: &str,
    ) -> Result<Recording, Error> {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(Error::Io {
                context: format!("profiling pid {pid}"),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such process"),
            });
        }
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let data = dir.join(format!("{name}.perf.data"));
        // Not -q: perf's closing line reports the number of samples written.
        let mut cmd = command(&self.program);
        cmd.args(["record", "--no-buildid-cache", "-e", &self.event])
            .args(["-F", &options.frequency_hz.to_string()])
            .args(["--call-graph", &options.call_graph.perf_arg()])
            .args(["-p", &pid.to_string(), "-o"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let control = if self.control {
            let pipes = control_pipes().map_err(Error::io("creating perf's control pipes"))?;
            let (ctl_r, ack_w) = (pipes.ctl_r.as_raw_fd(), pipes.ack_w.as_raw_fd());
            cmd.args(["-D", "-1", "--control", &format!("fd:{ctl_r},{ack_w}")]);
            // SAFETY: fcntl is async-signal-safe; the fds stay open in the parent until spawn
            // returns, so they are valid in the child.
            unsafe {
                cmd.pre_exec(move || {
                    for fd in [ctl_r, ack_w] {
                        if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            Some(pipes)
        } else {
            None
        };
        let child = cmd.spawn().map_err(Error::io("starting perf record"))?;
        let control = control.map(|p| {
            let ControlPipes {
                ctl_r,
                ctl_w,
                ack_r,
                ack_w,
            } = p;
            // Only perf holds its ends now, so its exit shows as end-of-file on `ack_r`.
            drop((ctl_r, ack_w));
            (File::from(ctl_w), File::from(ack_r))
        });
        Ok(Recording {
            perf: self.clone(),
            child: Some(child),
            pid,
            options: options.clone(),
            dir: dir.to_owned(),
            name: name.to_owned(),
            started: Instant::now(),
            control,
        })
    }
}

/// `perf record --control`'s two pipes: commands to perf, acknowledgements back.
struct ControlPipes {
    ctl_r: OwnedFd,
    ctl_w: OwnedFd,
    ack_r: OwnedFd,
    ack_w: OwnedFd,
}

fn control_pipes() -> std::io::Result<ControlPipes> {
    let pipe = || -> std::io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array on success.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned by nobody else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    };
    // The ends perf gets move above the child's stdio (still close-on-exec until pre_exec).
    let high = |fd: OwnedFd| -> std::io::Result<OwnedFd> {
        // SAFETY: F_DUPFD_CLOEXEC returns a new fd or -1.
        let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, CONTROL_FD_MIN) };
        if new == -1 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `new` is a fresh fd owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(new) })
    };
    let (ctl_r, ctl_w) = pipe()?;
    let (ack_r, ack_w) = pipe()?;
    Ok(ControlPipes {
        ctl_r: high(ctl_r)?,
        ctl_w,
        ack_r,
        ack_w: high(ack_w)?,
    })
}

/// Asks perf to enable its events and waits (up to `READY_TIMEOUT`) for its "ack". Any
/// failure just ends the wait: a perf that died says why when the recording is stopped.
fn await_enabled(mut ctl: &File, mut ack: &File) {
    if ctl.write_all(b"enable\n").is_err() {
        return;
    }
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"ack\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut pfd = libc::pollfd {
            fd: ack.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as libc::c_int) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if n == 0 {
            continue;
        }
        let mut buf = [0u8; 64];
        match ack.read(&mut buf) {
            Ok(0) | Err(_) => return, // end of file: perf exited
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

impl Recording {
    /// Opens the window: enables perf's events and waits for its "ack" (where it has
    /// `--control`; otherwise it has sampled since it started). The window is timed from here.
    pub fn enable(&mut self) {
        if let Some((ctl, ack)) = &self.control {
            await_enabled(ctl, ack);
        }
        self.started = Instant::now();
    }

    /// SIGINT to perf (it writes its data and exits), then `perf script` → folded stacks →
    /// SVG, written to `<name>.folded` and `<name>.svg`.
    pub fn stop(mut self) -> Result<Profile, Error> {
        let mut child = self.child.take().expect("a recording is stopped once");
        let window_s = self.started.elapsed().as_secs_f64();
        // SAFETY: kill(2) with a pid we spawned and have not reaped yet.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        let status = loop {
            match child
                .try_wait()
                .map_err(Error::io("waiting for perf record"))?
            {
                Some(status) => break status,
                None if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::Perf {
                        command: "perf record".into(),
                        status: "killed".into(),
                        stderr: format!("did not exit {STOP_TIMEOUT:?} after SIGINT"),
                    });
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let mut stderr = Vec::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_end(&mut stderr);
        }
        let data = self.dir.join(format!("{}.perf.data", self.name));
        // perf record re-raises the SIGINT it was stopped with once its data is written, and
        // exits 0 when the target exited first; anything else before any data is a refusal.
        let stopped = status.success() || status.signal() == Some(libc::SIGINT);
        if !stopped || !data.exists() {
            let _ = std::fs::remove_file(&data);
            if is_refusal(&stderr) {
                return Ok(Profile::NotAvailable(not_available(format!(
                    "perf record -p {} refused: {}",
                    self.pid,
                    perf_complaint(&stderr)
                ))));
            }
            return Err(Error::Perf {
                command: format!("perf record -p {}", self.pid),
                status: status.to_string(),
                stderr: perf_complaint(&stderr),
            });
        }

        let samples = samples_written(&stderr);
        let folded = self.script(&data)?;
        let (weight, stacks) = sample_count(&folded)?;
        let folded_path = self.dir.join(format!("{}.folded", self.name));
        std::fs::write(&folded_path, &folded)
            .map_err(Error::io(format!("writing {}", folded_path.display())))?;
        let svg_path = if weight > 0 {
            let path = self.dir.join(format!("{}.svg", self.name));
            let unit = weight_unit(&self.perf.event);
            let svg = flamegraph_svg(&folded, &self.options.title, unit)?;
            std::fs::write(&path, svg).map_err(Error::io(format!("writing {}", path.display())))?;
            Some(path)
        } else {
            None
        };
        let perf_data = if self.options.keep_perf_data {
            Some(data)
        } else {
            std::fs::remove_file(&data).map_err(Error::io("removing perf.data"))?;
            None
        };
        Ok(Profile::Recorded(ProfileRecord {
            event: self.perf.event.clone(),
            hardware_counters: self.perf.hardware_counters,
            call_graph: self.options.call_graph,
            frequency_hz: self.options.frequency_hz,
            samples,
            weight,
            weight_unit: weight_unit(&self.perf.event).to_owned(),
            stacks,
            perf_version: self.perf.version.clone(),
            pid: self.pid,
            window_s,
            folded: folded_path,
            svg: svg_path,
            perf_data,
        }))
    }

    /// `perf script` streamed straight into the folder (its text is large with DWARF stacks).
    fn script(&self, data: &Path) -> Result<Vec<u8>, Error> {
        let mut child = command(&self.perf.program)
            .args(["script", "-i"])
            .arg(data)
            .args((!self.options.inline).then_some("--no-inline"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::io("starting perf script"))?;
        let mut stderr_pipe = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut buf);
            buf
        });
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let folded = fold_perf_script_from(stdout);
        let status = child.wait().map_err(Error::io("waiting for perf script"))?;
        let stderr = stderr.join().unwrap_or_default();
        if !status.success() {
            return Err(Error::Perf {
                command: "perf script".into(),
                status: status.to_string(),
                stderr: perf_complaint(&stderr),
            });
        }
        folded
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hint::black_box;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::profile::CallGraph;

    const CHILD_ENV: &str = "PINGMATRIX_PROFILE_BUSY_CHILD";

    #[test]
    fn missing_perf_is_not_available_with_the_reason() {
        let na = Perf::probe_with("/nonexistent/perf").unwrap_err();
        assert!(
            na.reason.starts_with("cannot run /nonexistent/perf"),
            "{na}"
        );
        assert!(na.to_string().starts_with("not available: "));
    }

    #[test]
    fn kernel_refusals_are_told_apart_from_perf_failures() {
        let eacces = b"Error:\nAccess to performance monitoring and observability operations is limited.\nConsider adjusting /proc/sys/kernel/perf_event_paranoid setting\n";
        assert!(is_refusal(eacces));
        assert!(is_refusal(
            b"perf_event_open(..., 0) failed unexpectedly with error 1 (Operation not permitted)"
        ));
        assert!(!is_refusal(
            b"failed to open perf.data: No space left on device"
        ));
        assert_eq!(
            perf_complaint(b"\n  Error:\n a\n b\n c\n"),
            "Error: / a / b"
        );
        let closing = b"[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.015 MB /tmp/x/busy.perf.data (196 samples) ]\n";
        assert_eq!(samples_written(closing), Some(196));
        assert_eq!(samples_written(b""), None);
        assert_eq!(weight_unit("cpu-clock:u"), "ns");
        assert_eq!(weight_unit("cycles"), "cycles");
    }

    #[inline(never)]
    fn busy_spin_for_profiling(until: Instant) -> u64 {
        let mut x = 1u64;
        while Instant::now() < until {
            x = black_box(
                x.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407),
            );
        }
        x
    }

    /// The process `profiles_a_real_busy_process` profiles: this test binary, re-run with only
    /// this test, spinning for at most 5 s.
    #[test]
    #[ignore = "child process of profiles_a_real_busy_process"]
    fn busy_child() {
        if std::env::var_os(CHILD_ENV).is_some() {
            busy_spin_for_profiling(Instant::now() + Duration::from_secs(5));
        }
    }

    /// Profiles a busy child (this test binary running `busy_child`) for `cpu_ticks` of its
    /// CPU time (1/100 s each) from the moment `Perf::start` returns; None (after saying so)
    /// where perf is missing or refused.
    fn record_busy_child(test: &str, cpu_ticks: u64) -> Option<(Perf, ProfileRecord, PathBuf)> {
        let perf = match Perf::probe() {
            Ok(perf) => perf,
            Err(na) => {
                eprintln!("SKIPPED {test}: perf {na}");
                return None;
            }
        };
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "profile::perf::tests::busy_child", "--ignored"])
            .env(CHILD_ENV, "1")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let dir = std::env::temp_dir().join(format!("pingmatrix-{test}-{}", std::process::id()));
        let options = Options {
            frequency_hz: 199,
            title: "busy child".into(),
            ..Options::default()
        };
        // Under load the child may not run at once: wait until it has spun for a while, so
        // the window holds samples.
        let ticks = |pid: u32| -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let rest = stat.rsplit_once(')').map_or("", |r| r.1);
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
                + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while ticks(child.id()) < 5 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let recording = perf.start(child.id(), &options, &dir, "busy").unwrap();
        // A window of the child's CPU time, not of wall time.
        let from = ticks(child.id());
        while ticks(child.id()) < from + cpu_ticks && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let profile = recording.stop();
        let _ = child.kill();
        let _ = child.wait();
        match profile.unwrap() {
            Profile::Recorded(record) => Some((perf, record, dir)),
            Profile::NotAvailable(na) => {
                eprintln!("SKIPPED {test}: perf record {na}");
                None
            }
        }
    }

    #[test]
    fn a_short_window_is_sampled_from_its_start() {
        // 0.1 s of the child's CPU from the moment `start` returns: ~20 samples at 199 Hz once
        // perf has said its events are on. perf takes 60-90 ms to attach on an idle VM (more
        // under load), which without that wait swallowed most of such a window.
        let Some((perf, record, dir)) = record_busy_child("short_window", 10) else {
            return;
        };
        std::fs::remove_dir_all(&dir).unwrap();
        if !perf.control {
            eprintln!("SKIPPED a_short_window_is_sampled_from_its_start: perf has no --control");
            return;
        }
        let samples = record.samples.expect("perf reports the samples it wrote");
        assert!(samples >= 10, "{samples} samples in 0.1 s of CPU at 199 Hz");
    }

    #[test]
    fn profiles_a_real_busy_process() {
        // ~0.4 s of spinning (40 ticks).
        let Some((perf, record, dir)) = record_busy_child("busy_process", 40) else {
            return;
        };
        let folded = std::fs::read_to_string(&record.folded).unwrap();
        let svg = std::fs::read_to_string(record.svg.as_ref().unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();

        assert_eq!(record.event, perf.event);
        assert_eq!(record.call_graph, CallGraph::Dwarf { stack_bytes: 8192 });
        assert!(record.perf_version.starts_with("perf version"));
        assert!(
            record.perf_data.is_none(),
            "perf.data is removed by default"
        );
        // ~80 samples expected at 199 Hz for 0.4 s of CPU; leave room for a busy machine.
        let samples = record.samples.expect("perf reports the samples it wrote");
        assert!(samples >= 20, "{samples} samples");
        // Unwound through the spin loop into the test harness: user frames of a Rust binary.
        assert!(folded.contains("busy_spin_for_profiling"), "{folded}");
        assert!(svg.contains("busy_spin_for_profiling"));
        let (weight, _) = sample_count(folded.as_bytes()).unwrap();
        assert_eq!(weight, record.weight);
        if record.event.starts_with("cpu-clock") {
            // Each cpu-clock sample weighs its period, ~1/199 s in ns.
            let per_sample = weight as f64 / samples as f64;
            assert!(
                (per_sample - 1e9 / 199.0).abs() < 0.2 * 1e9 / 199.0,
                "{per_sample} ns/sample"
            );
        }
    }
}
