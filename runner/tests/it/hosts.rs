//! Multi-host runs for real on one machine: four network namespaces on a bridge — the runner
//! in `c`, a server host `s` and two generator hosts `a` and `b` — with addresses from
//! 127.0.0.0/8 only (route_localnet=1, and loopback narrowed to 127.0.0.1/32 inside each
//! namespace so 127.0.10.x leaves through the bridge), each host running Debian's OpenSSH
//! server with a host key and a client key made for the test.
//!
//! One test, in order: `matrix run --quick` with the server on `s` and the load split
//! between `a` and `b` (run.json records every host and its binary hashes; each cell's
//! percentiles equal those of the generators' merged histograms; each repetition counted as
//! a local one is: syscalls and context switches per request, server and generator); an unreachable host and
//! a refused key (each cell fails naming host and cause, the other cells still run), and a
//! server host without cgroups under a CPU-quota profile (unsupported, naming it); a
//! work_dir another user owns, and one others can write (refused with the reason, nothing
//! shipped there); a cached binary swapped on the host (re-shipped, never run); Ctrl-C
//! mid-cell, then `--resume`; and SIGKILL of the runner mid-cell (after both, no pingmatrix
//! process is left in any namespace within 10 s).
//! Everything is torn down on drop, also when an assertion fails. Without root, `ip netns`
//! or sshd it is skipped with a loud message.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::live;

use live::{Scratch, bin, only_run_dir, out_text, read};
use loadgen::hdr_v2_decode as decode;
use loadgen::hosts::same_percentiles;
use runner::results::schema::{CellResult, CellStatus, RunRecord};

const SSHD: &str = "/usr/sbin/sshd";
/// The bridge's subnet (inside the test's namespaces only).
const NET: &str = "127.0.10";

/// Whether perf can count here (the syscall window needs it; without it the counts say why).
fn perf_runs() -> bool {
    Command::new("perf")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    if !Path::new(SSHD).exists() {
        return Some(format!("{SSHD} missing (apt-get install openssh-server)"));
    }
    for tool in ["ip", "ssh", "ssh-keygen"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{tool} not on PATH"));
        }
    }
    None
}

fn sh(args: &[&str]) -> Result<String, String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).to_string())
    } else {
        Err(format!("{args:?}: {}", out_text(&o)))
    }
}

/// The namespaces, their sshds and keys; all removed on drop.
struct Net {
    prefix: String,
    made: Vec<String>,
    dir: Scratch,
}

impl Net {
    fn ns(&self, n: &str) -> String {
        format!("{}{n}", self.prefix)
    }

    /// `ip netns exec <ns> …`
    fn exec(&self, n: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(n)]).args(args);
        c
    }

    fn run(&self, n: &str, script: &str) -> Result<String, String> {
        let ns = self.ns(n);
        sh(&["ip", "netns", "exec", &ns, "sh", "-ec", script])
    }

    /// `c` holds the bridge (127.0.10.254); hosts s, a, b are .1, .2, .3 behind veths.
    fn up() -> Result<Net, String> {
        let mut net = Net {
            prefix: format!("pm{}", std::process::id() % 100_000),
            made: Vec::new(),
            dir: Scratch::new("hosts"),
        };
        for n in ["c", "s", "a", "b"] {
            let ns = net.ns(n);
            sh(&["ip", "netns", "add", &ns])?;
            net.made.push(ns);
        }
        let c = net.ns("c");
        sh(&["ip", "-n", &c, "link", "add", "br0", "type", "bridge"])?;
        for (i, n) in ["s", "a", "b"].iter().enumerate() {
            let peer = format!("v{i}");
            let ns = net.ns(n);
            sh(&[
                "ip", "-n", &c, "link", "add", &peer, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ])?;
            sh(&["ip", "-n", &c, "link", "set", &peer, "master", "br0", "up"])?;
        }
        for (n, dev, host) in [
            ("c", "br0", 254),
            ("s", "eth0", 1),
            ("a", "eth0", 2),
            ("b", "eth0", 3),
        ] {
            net.run(
                n,
                &format!(
                    "ip link set lo up
                     ip addr del 127.0.0.1/8 dev lo
                     ip addr add 127.0.0.1/32 dev lo
                     for k in all default lo {dev}; do sysctl -qw net.ipv4.conf.$k.route_localnet=1; done
                     ip addr add {NET}.{host}/24 dev {dev}
                     ip link set {dev} up"
                ),
            )?;
        }
        net.keys_and_sshds()?;
        Ok(net)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.0.join(f)
    }

    fn keys_and_sshds(&mut self) -> Result<(), String> {
        let d = self.dir.0.clone();
        for k in ["hostkey", "userkey", "otherkey"] {
            let p = d.join(k);
            sh(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "pingmatrix-test",
                "-f",
                p.to_str().unwrap(),
            ])?;
        }
        std::fs::copy(d.join("userkey.pub"), d.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let host_pub = std::fs::read_to_string(d.join("hostkey.pub")).map_err(|e| e.to_string())?;
        let known: String = (1..=3).map(|h| format!("{NET}.{h} {host_pub}")).collect();
        std::fs::write(d.join("known_hosts"), known).map_err(|e| e.to_string())?;
        std::fs::create_dir_all("/run/sshd").map_err(|e| e.to_string())?;
        for (n, h) in [("s", 1), ("a", 2), ("b", 3)] {
            let cfg = d.join(format!("sshd-{n}.conf"));
            std::fs::write(
                &cfg,
                format!(
                    "ListenAddress {NET}.{h}:22\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized_keys\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n\
                     PidFile {d}/sshd-{n}.pid\nLogLevel ERROR\n",
                    d = d.display()
                ),
            )
            .map_err(|e| e.to_string())?;
            self.start_sshd(n)?;
        }
        for h in 1..=3 {
            self.wait_for_sshd(h)?;
        }
        Ok(())
    }

    /// Starts host `n`'s sshd from its config file.
    fn start_sshd(&self, n: &str) -> Result<(), String> {
        let d = &self.dir.0;
        let cfg = d.join(format!("sshd-{n}.conf"));
        let log = d.join(format!("sshd-{n}.log"));
        // Daemonizes inside the namespace; `down` kills every process of the namespace.
        sh(&[
            "ip",
            "netns",
            "exec",
            &self.ns(n),
            SSHD,
            "-f",
            cfg.to_str().unwrap(),
            "-E",
            log.to_str().unwrap(),
        ])
        .map(|_| ())
    }

    /// Ready when the client gets in with the test key.
    fn wait_for_sshd(&self, h: u32) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        {
            loop {
                let ok = self
                    .ssh_cmd(&format!("{NET}.{h}"), "userkey")
                    .arg("true")
                    .output()
                    .is_ok_and(|o| o.status.success());
                if ok {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("sshd on {NET}.{h} not reachable within 10 s"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    fn ssh_cmd(&self, addr: &str, key: &str) -> Command {
        let mut c = self.exec("c", &["ssh"]);
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-i"])
            .arg(self.path(key))
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                self.path("known_hosts").display()
            ))
            .arg(format!("root@{addr}"));
        c
    }

    /// (pid, comm) of every process in namespace `n`.
    fn procs(&self, n: &str) -> Vec<(u32, String)> {
        let out = sh(&["ip", "netns", "pids", &self.ns(n)]).unwrap_or_default();
        out.split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter_map(|p| {
                let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).ok()?;
                Some((p, comm.trim().to_string()))
            })
            .collect()
    }

    /// A matrix file for these hosts; `defaults` adds lines to `[defaults]`, `extra` adds
    /// hosts and profiles.
    fn matrix(&self, duration_ms: u64, defaults: &str, extra: &str) -> PathBuf {
        let host = |name: &str, h: u32, key: &str| {
            format!(
                "\n[[hosts]]\nname = \"{name}\"\nhost = \"{NET}.{h}\"\nuser = \"root\"\n\
                 identity_file = \"{}\"\nwork_dir = \"{}\"\n\
                 ssh_options = [\"UserKnownHostsFile={}\", \"StrictHostKeyChecking=yes\"]\n",
                self.path(key).display(),
                self.path(&format!("remote-{name}")).display(),
                self.path("known_hosts").display()
            )
        };
        let text = format!(
            r#"[defaults]
warmup_ms = 100
duration_ms = {duration_ms}
repetitions = 1
cooldown_ms = 0
startup_timeout_ms = 5000
stop_grace_ms = 1000
loadgen = "{loadgen}"
reference = "ping-epoll/ping/c4/split"
{defaults}

[quick]
cells = ["ping/c4/split", "open/r2000/split"]

[[services]]
name = "ping-epoll"
binary = "{epoll}"

[[scenarios]]
name = "ping"
path = "/ping"
expect_body_bytes = 4
load = {{ model = "closed", connections = [4] }}

[[scenarios]]
name = "open"
path = "/ping"
expect_body_bytes = 4
load = {{ model = "open", rates_per_s = [2000], max_connections = 4 }}
profiles = ["split"]

[[profiles]]
name = "split"
server_cpus = "0"
loadgen_cpus = "1"
server_host = "srv"
loadgen_hosts = ["gen1", "gen2"]
{srv}{g1}{g2}{extra}"#,
            loadgen = bin("loadgen").display(),
            epoll = bin("ping-epoll").display(),
            srv = host("srv", 1, "userkey"),
            g1 = host("gen1", 2, "userkey"),
            g2 = host("gen2", 3, "userkey"),
        );
        // `--resume` reads the matrix from run.json, so a later phase may overwrite the file.
        let p = self.path(&format!("matrix-{duration_ms}.toml"));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `matrix run` inside namespace `c`.
    fn matrix_run(&self, config: &Path, out: &Path, extra: &[&str]) -> Command {
        let matrix = bin("matrix");
        let mut c = self.exec("c", &[matrix.to_str().unwrap(), "run", "--quiet"]);
        c.arg("--config")
            .arg(config)
            .arg("--out")
            .arg(out)
            .args(extra);
        c
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.made.iter().rev() {
            let out = sh(&["ip", "netns", "pids", ns]).unwrap_or_default();
            for p in out.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: SIGKILL to a process of a namespace this test created.
                unsafe {
                    libc::kill(p, libc::SIGKILL);
                }
            }
            let _ = sh(&["ip", "netns", "del", ns]);
        }
    }
}

/// `[defaults]` of the phases that check hosts, failures and processes rather than
/// measures: no drift re-runs of the reference cell and no syscall window (each about 3 s a
/// repetition here).
const LEAN: &str = "drift_points = 0\ncount_syscalls = false";

fn cell(run: &Path, key: &str) -> CellResult {
    read(&run.join("cells").join(format!("{key}.json")))
}

#[test]
fn server_and_two_generators_in_namespaces_over_ssh() {
    if let Some(why) = missing() {
        eprintln!("\n!!! SKIPPED server_and_two_generators_in_namespaces_over_ssh: {why} !!!\n");
        return;
    }
    let net = match Net::up() {
        Ok(n) => n,
        Err(e) => {
            eprintln!(
                "\n!!! SKIPPED server_and_two_generators_in_namespaces_over_ssh: cannot make the namespaces: {e} !!!\n"
            );
            return;
        }
    };
    for (what, step) in [
        ("merged run", merged_run as fn(&Net)),
        ("bad hosts", bad_hosts),
        (
            "work_dir owned by another user, or group/other-writable: refused",
            unsafe_work_dirs_refused,
        ),
        (
            "swapped cached binary: never run",
            swapped_cached_binary_never_runs,
        ),
        ("Ctrl-C and --resume", interrupt_then_resume),
        ("host outage and --resume", outage_then_resume),
        ("SIGKILL", sigkill_leaves_nothing),
    ] {
        let t = Instant::now();
        step(&net);
        eprintln!(
            "hosts: {what}: passed in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}

/// The quick run: every host recorded, percentiles merged from two generator hosts.
fn merged_run(net: &Net) {
    let out = net.path("out-good");
    // The syscall counts stay on: they are what a remote cell must record like a local one.
    let config = net.matrix(300, "drift_points = 0", "");
    let o = net
        .matrix_run(&config, &out, &["--quick"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    let run: RunRecord = read(&run_dir.join("run.json"));
    let names: Vec<&str> = run.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gen1", "gen2", "srv"]);
    for h in &run.hosts {
        assert_eq!(h.unavailable, None, "{h:?}");
        assert!(h.environment.is_some(), "{}: no environment", h.name);
        assert!(h.clock_offset_us.is_some());
        let want: &[&str] = if h.name == "srv" {
            &["matrix", "ping-epoll"]
        } else {
            &["loadgen", "matrix"]
        };
        assert_eq!(
            h.binaries.keys().map(String::as_str).collect::<Vec<_>>(),
            want
        );
        for (name, b) in &h.binaries {
            assert!(b.verified && b.via == "copied", "{}: {name}: {b:?}", h.name);
            assert!(
                b.remote_path.starts_with(
                    &net.path(&format!("remote-{}", h.name))
                        .display()
                        .to_string()
                )
            );
            let local = runner::host::ship::sha256_file(&bin(name)).unwrap();
            assert_eq!(b.sha256, local, "{name}");
        }
    }
    for key in [
        "ping-epoll__ping__c4__split",
        "ping-epoll__open__r2000__split",
    ] {
        let c = cell(&run_dir, key);
        assert_eq!(c.status, CellStatus::Ok, "{key}: {:?}", c.failure);
        let rep = &c.reps[0];
        let hosts: Vec<&str> = rep.generators.iter().map(|g| g.host.as_str()).collect();
        assert_eq!(hosts, ["gen1", "gen2"]);
        // The cell's percentiles are those of the two hosts' histograms added together.
        let mut all = decode(&rep.generators[0].report.latency_hdr_v2_b64).unwrap();
        all.add(decode(&rep.generators[1].report.latency_hdr_v2_b64).unwrap())
            .unwrap();
        assert!(same_percentiles(
            &rep.report.latency_us,
            &loadgen::percentiles(&all)
        ));
        let sent: u64 = rep.generators.iter().map(|g| g.report.counts.sent).sum();
        assert_eq!(rep.report.counts.sent, sent);
        assert!(rep.report.counts.ok > 0 && rep.report.counts.errors.total() == 0);
        // Each generator carried half the load, against the server host's address.
        for g in &rep.generators {
            assert!(
                g.report.spec.url.starts_with(&format!("http://{NET}.1:")),
                "{}",
                g.report.spec.url
            );
            assert_eq!(g.report.spec.connections(), 2);
        }
        assert!(
            rep.server.cpu_us_per_request.is_some(),
            "{key}: {:?}",
            rep.server
        );
        // Counted as a local cell is: the service's context switches per request from /proc
        // on its host, its syscalls over exact request counts (perf on the server host, the
        // two loads from gen1), and the generators' /proc counts added up.
        let k = rep
            .counts
            .as_ref()
            .expect("a multi-host repetition is counted");
        eprintln!(
            "{key}: server {:?} syscalls and {:?} context switches per request; loadgen {:?} syscalls",
            k.server.syscalls_per_request(),
            k.server.ctx_switches_per_request(),
            k.loadgen.syscalls_per_request(),
        );
        // The generator's context switches are summed over its threads, which leave with
        // their counts as it ends: over a 300 ms window often not countable, here as on one
        // machine. The server's are.
        assert!(
            k.server.ctx_switches_per_request().is_some_and(|n| n > 0.0),
            "{key}: server: {:?}",
            k.server
        );
        for (who, p) in [("server", &k.server), ("loadgen", &k.loadgen)] {
            match p.syscalls_per_request() {
                // Above zero, not above one: a generator on io_uring submits and reaps many
                // requests per io_uring_enter (0.35 per request seen here).
                Some(n) => assert!(n > 0.0 && n < 50.0, "{key}: {who}: {n} syscalls/request"),
                None => assert!(
                    !perf_runs() && p.syscalls_unmeasured.is_some(),
                    "{key}: {who}: perf runs here but counted nothing: {p:?}"
                ),
            }
        }
        if k.server.syscalls.is_some() {
            assert_eq!(k.server.syscall_points.len(), 2, "{key}: {:?}", k.server);
            assert!(
                k.server.syscalls_by_name_unmeasured.is_some()
                    || !k.server.syscalls_by_name.is_empty(),
                "{key}: {:?}",
                k.server
            );
        }
        assert_eq!(
            c.starts[0].stop.as_ref().map(|s| s.port_free_after),
            Some(true)
        );
        // Started on the server host as on the runner's: after a warm-up start, the clock
        // from the child's exec.
        for st in &c.starts {
            assert!(st.warmup_first_200_us.is_some(), "{key}: {st:?}");
            assert!(
                st.first_200_us.is_some() && st.launch_us.is_some(),
                "{key}: {st:?}"
            );
        }
    }
    let page = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    let hosts = &page[page
        .find("## Hosts")
        .expect("results.md has a Hosts section")..];
    eprintln!("{hosts}");
    for want in [
        "| srv | root@127.0.10.1 | server |",
        "| gen1 |",
        "| **merged** |",
    ] {
        assert!(hosts.contains(want), "{want:?} not in\n{hosts}");
    }
    // Nothing left behind on the hosts but their sshd.
    assert_quiet(net, Duration::from_secs(5));
}

/// A `[[profiles]]` entry: the server on CPU 0 of `server_host`, the load from CPU 1 of
/// `generator`; `extra` adds lines.
fn profile(name: &str, server_host: &str, generator: &str, extra: &str) -> String {
    format!(
        "\n[[profiles]]\nname = \"{name}\"\nserver_cpus = \"0\"\nloadgen_cpus = \"1\"\n{extra}\
         server_host = \"{server_host}\"\nloadgen_hosts = [\"{generator}\"]\n"
    )
}

/// An unreachable host and a refused key: their cells fail naming host and cause; the
/// cells on good hosts still run.
fn bad_hosts(net: &Net) {
    let out = net.path("out-bad");
    let extra = format!(
        r#"
[[hosts]]
name = "ghost"
host = "{NET}.9"
user = "root"
identity_file = "{key}"

[[hosts]]
name = "badkey"
host = "{NET}.2"
user = "root"
identity_file = "{other}"
ssh_options = ["UserKnownHostsFile={known}"]

{unreachable}{quota}{refused}"#,
        key = net.path("userkey").display(),
        other = net.path("otherkey").display(),
        known = net.path("known_hosts").display(),
        unreachable = profile("unreachable", "ghost", "gen1", ""),
        quota = profile("quota", "srv", "gen1", "cpu_quota = 0.5\n"),
        refused = profile("refused", "srv", "badkey", ""),
    );
    let config = net.matrix(200, LEAN, &extra);
    let o = net
        .matrix_run(&config, &out, &["--only", "scenario=ping"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    let ok = cell(&run_dir, "ping-epoll__ping__c4__split");
    assert_eq!(ok.status, CellStatus::Ok, "{:?}", ok.failure);
    let ghost = cell(&run_dir, "ping-epoll__ping__c4__unreachable");
    let why = ghost.failure.as_ref().unwrap().reason.clone();
    assert_eq!(ghost.status, CellStatus::Failed);
    assert!(
        why.contains("host ghost unavailable: ssh root@127.0.10.9"),
        "{why}"
    );
    let refused = cell(&run_dir, "ping-epoll__ping__c4__refused");
    let why = refused.failure.as_ref().unwrap().reason.clone();
    assert!(
        why.contains("host badkey unavailable") && why.contains("Permission denied"),
        "{why}"
    );
    // `ip netns exec` mounts a fresh /sys without the cgroup filesystem: the server host
    // has no cgroups, so a CPU quota cannot be applied there.
    let no_cgroups = net
        .run("s", "ls /sys/fs/cgroup")
        .is_ok_and(|o| o.trim().is_empty());
    let quota = cell(&run_dir, "ping-epoll__ping__c4__quota");
    if no_cgroups {
        let why = quota.failure.as_ref().unwrap().reason.clone();
        assert_eq!(quota.status, CellStatus::Unsupported, "{why}");
        assert!(why.starts_with("host srv: server: CPU quota"), "{why}");
    } else {
        eprintln!(
            "hosts: the server namespace has cgroups here; the no-cgroup case is not exercised"
        );
    }
    let run: RunRecord = read(&run_dir.join("run.json"));
    let ghost = run.hosts.iter().find(|h| h.name == "ghost").unwrap();
    assert!(ghost.unavailable.is_some());
    assert_quiet(net, Duration::from_secs(5));
}

/// Hosts named after their profiles, each the server host's address with its own work_dir,
/// the load from the runner's namespace (no generator host to ready keeps it short):
/// `(profile, work_dir)`.
fn work_dir_hosts(net: &Net, dirs: &[(&str, PathBuf)]) -> String {
    dirs.iter()
        .map(|(p, dir)| {
            format!(
                r#"
[[hosts]]
name = "{p}"
host = "{NET}.1"
user = "root"
identity_file = "{key}"
work_dir = "{dir}"
ssh_options = ["UserKnownHostsFile={known}", "StrictHostKeyChecking=yes"]
{profile}"#,
                key = net.path("userkey").display(),
                known = net.path("known_hosts").display(),
                dir = dir.display(),
                profile = profile(p, p, "local", ""),
            )
        })
        .collect()
}

/// Work dirs another user owns (made first, as anyone can under /tmp) or others can write:
/// each host's cell fails with the reason, the run exits 1, nothing is written there. One
/// run for all three keeps the test short.
fn unsafe_work_dirs_refused(net: &Net) {
    let nobody = std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .find(|l| l.split(':').nth(2) == Some("65534"))
        .and_then(|l| l.split(':').next().map(str::to_string))
        .unwrap_or_else(|| "UNKNOWN".into());
    let cases = [
        (
            "theirs",
            0o700,
            format!("is owned by uid 65534 ({nobody}), not by the SSH user (uid 0)"),
        ),
        (
            "groupw",
            0o770,
            "is writable by group or others (mode 770)".to_string(),
        ),
        (
            "otherw",
            0o1777,
            "is writable by group or others (mode 1777)".to_string(),
        ),
    ];
    let dirs: Vec<(&str, PathBuf)> = cases.iter().map(|(p, ..)| (*p, net.path(p))).collect();
    for ((p, mode, _), (_, dir)) in cases.iter().zip(&dirs) {
        std::fs::create_dir(dir).unwrap();
        if *p == "theirs" {
            std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let out = net.path("out-workdirs");
    let config = net.matrix(200, LEAN, &work_dir_hosts(net, &dirs));
    let o = net
        .matrix_run(
            &config,
            &out,
            &[
                "--only",
                "scenario=ping",
                "--only",
                "profile=theirs,groupw,otherw",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    for ((p, _, want), (_, dir)) in cases.iter().zip(&dirs) {
        let c = cell(&run_dir, &format!("ping-epoll__ping__c4__{p}"));
        assert_eq!(c.status, CellStatus::Failed, "{p}");
        let why = c.failure.as_ref().unwrap().reason.clone();
        let want = format!(
            "host {p} unavailable: work_dir {} {want}; nothing is shipped to or run from it",
            dir.display()
        );
        assert!(why.contains(&want), "{p}: {why}\nwanted: {want}");
        let left: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        assert!(
            left.is_empty(),
            "{p}: shipped into a refused work_dir: {left:?}"
        );
    }
    assert_quiet(net, Duration::from_secs(5));
}

/// The server host's cached `matrix` and service swapped for a script after a run: the
/// next run finds the hashes changed, ships both again and never runs the scripts; the
/// work_dir and what is in it are the SSH user's alone (0700), so no one else could swap
/// a file between its check and its start.
fn swapped_cached_binary_never_runs(net: &Net) {
    let work = net.path("remote-srv");
    let marker = net.path("swapped-ran");
    let run: RunRecord = read(&only_run_dir(&net.path("out-good")).join("run.json"));
    let srv = run.hosts.iter().find(|h| h.name == "srv").unwrap();
    for name in ["matrix", "ping-epoll"] {
        let p = Path::new(&srv.binaries[name].remote_path);
        std::fs::write(
            p,
            format!("#!/bin/sh\necho {name} >> {}\nexit 1\n", marker.display()),
        )
        .unwrap();
    }
    let out = net.path("out-swapped");
    let config = net.matrix(200, LEAN, &profile("srvonly", "srv", "local", ""));
    let o = net
        .matrix_run(
            &config,
            &out,
            &["--only", "scenario=ping", "--only", "profile=srvonly"],
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        !marker.exists(),
        "a swapped binary ran: {:?}",
        std::fs::read_to_string(&marker)
    );
    let run_dir = only_run_dir(&out);
    let c = cell(&run_dir, "ping-epoll__ping__c4__srvonly");
    assert_eq!(c.status, CellStatus::Ok, "{:?}", c.failure);
    let run: RunRecord = read(&run_dir.join("run.json"));
    let srv = run.hosts.iter().find(|h| h.name == "srv").unwrap();
    for name in ["matrix", "ping-epoll"] {
        let b = &srv.binaries[name];
        assert_eq!(b.via, "copied", "{name}: {b:?}");
        assert_eq!(
            std::fs::read(&b.remote_path).unwrap(),
            std::fs::read(bin(name)).unwrap()
        );
        let mode = std::fs::metadata(&b.remote_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{name}");
    }
    let mode = std::fs::metadata(&work).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the work_dir");
    assert_quiet(net, Duration::from_secs(5));
}

/// Starts `matrix run` on the ping cell and waits until loadgen runs on both generator
/// hosts and the service on the server host.
fn start_loaded(net: &Net, out: &Path, defaults: &str) -> std::process::Child {
    let config = net.matrix(2000, defaults, "");
    let mut child = net
        .matrix_run(&config, out, &["--only", "scenario=ping"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let busy = |n: &str, comm: &str| net.procs(n).iter().any(|(_, c)| c == comm);
    while !(busy("a", "loadgen") && busy("b", "loadgen") && busy("s", "ping-epoll")) {
        assert!(
            Instant::now() < deadline,
            "the multi-host cell never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "matrix ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// Ctrl-C mid-cell: nothing left on any host within 10 s, exit 130; `--resume` then runs
/// the interrupted cell again on all three hosts.
fn interrupt_then_resume(net: &Net) {
    let out = net.path("out-int");
    let mut child = start_loaded(net, &out, LEAN);
    // SAFETY: SIGINT to the child we started (`ip netns exec` exec'd matrix).
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    assert_quiet(net, Duration::from_secs(10));
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let run_dir = only_run_dir(&out);
    let c = resume_split_cell(net, &run_dir);
    assert_eq!(c.reps[0].generators.len(), 2);
    let run: RunRecord = read(&run_dir.join("run.json"));
    assert_eq!(run.hosts.len(), 3);
    assert_quiet(net, Duration::from_secs(5));
}

/// `matrix run --resume` of `run_dir` from the client namespace: it succeeds and the split
/// cell is ok; that cell.
fn resume_split_cell(net: &Net, run_dir: &Path) -> CellResult {
    let matrix = bin("matrix");
    let o = net
        .exec(
            "c",
            &[matrix.to_str().unwrap(), "run", "--quiet", "--resume"],
        )
        .arg(run_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let c = cell(run_dir, "ping-epoll__ping__c4__split");
    assert_eq!(c.status, CellStatus::Ok, "{:?}", c.failure);
    c
}

/// Every sshd of the server host killed mid-cell: the cell fails naming the lost host, the
/// run exits 1; once sshd is back, `--resume` runs the cell again (it used to re-run only
/// the drift point and leave the cells failed).
fn outage_then_resume(net: &Net) {
    let out = net.path("out-outage");
    // One drift point: the resume must run the failed cell again, not only the drift point.
    let mut child = start_loaded(net, &out, "drift_points = 1\ncount_syscalls = false");
    for (p, comm) in net.procs("s") {
        if comm == "sshd" {
            // SAFETY: SIGKILL to a process of a namespace this test created.
            unsafe {
                libc::kill(p as i32, libc::SIGKILL);
            }
        }
    }
    assert_eq!(child.wait().unwrap().code(), Some(1));
    let run_dir = only_run_dir(&out);
    let c = cell(&run_dir, "ping-epoll__ping__c4__split");
    assert_eq!(c.status, CellStatus::Failed);
    let f = c.failure.as_ref().unwrap();
    assert!(f.host_lost && f.reason.starts_with("host srv"), "{f:?}");
    net.start_sshd("s").unwrap();
    net.wait_for_sshd(1).unwrap();
    resume_split_cell(net, &run_dir);
    assert_quiet(net, Duration::from_secs(5));
}

/// SIGKILL of the runner while both generators load the server: within 10 s no process of
/// pingmatrix is left in any namespace.
fn sigkill_leaves_nothing(net: &Net) {
    let mut child = start_loaded(net, &net.path("out-kill"), LEAN);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_quiet(net, Duration::from_secs(10));
}

/// Within `within`, every namespace holds nothing but sshd.
fn assert_quiet(net: &Net, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<(String, u32, String)> = ["c", "s", "a", "b"]
            .iter()
            .flat_map(|n| {
                net.procs(n)
                    .into_iter()
                    .filter(|(_, c)| c != "sshd")
                    .map(move |(p, c)| (n.to_string(), p, c))
            })
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still running after {} s: {left:?}",
            within.as_secs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
