//! `[[hosts]]` and where profiles place their server and generators: names (unique, not
//! "local"), SSH destinations that cannot be read as ssh options, an identity file that
//! exists, an absolute work directory without shell-special characters, and `server_host` /
//! `loadgen_hosts` that name defined hosts. Nothing here touches the network: reachability,
//! keys and cgroup support are checked when the run starts, per host.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;

use toml::Spanned;

use super::Errs;
use super::names::Names;
use crate::config::schema::{HostEntry, Profile, Scenario, Service};
use crate::config::{HostDef, LOCAL_HOST, ProfileDef, ScenarioDef};
use crate::results::schema::Placement;
use loadgen::LoadModel;

/// Where binaries go on a host unless `work_dir` says otherwise: under the SSH user's home,
/// made 0700 (`host::work_dir`), where no other user can put or change a binary.
pub const DEFAULT_WORK_DIR: &str = "~/.cache/pingmatrix";

/// Most generator hosts one cell may split its load between.
pub const MAX_LOADGEN_HOSTS: usize = 16;

pub(super) fn check(errs: &mut Errs, hosts: &[HostEntry], base: &Path) -> Vec<HostDef> {
    let mut names = Names::default();
    hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let field = |f: &str| format!("hosts[{i}].{f}");
            let name = names.add(errs, &h.name, field("name"));
            if name == LOCAL_HOST {
                errs.at(
                    h.name.span(),
                    field("name"),
                    "\"local\" is this machine's name in profiles; choose another",
                );
            }
            word(errs, &h.host, field("host"), "host");
            if let Some(u) = &h.user {
                word(errs, u, field("user"), "user");
            }
            if let Some(p) = &h.port
                && *p.get_ref() == 0
            {
                errs.at(p.span(), field("port"), "must be 1..=65535");
            }
            let identity_file = h.identity_file.as_ref().map(|f| {
                let p = base.join(f.get_ref());
                if !p.is_file() {
                    errs.at(
                        f.span(),
                        field("identity_file"),
                        format!("{} is not a readable file", p.display()),
                    );
                }
                p
            });
            if let Some(a) = &h.address
                && a.get_ref().parse::<IpAddr>().is_err()
            {
                errs.at(
                    a.span(),
                    field("address"),
                    format!("{:?} is not an IP address", a.get_ref()),
                );
            }
            let work_dir = h
                .work_dir
                .as_ref()
                .map_or(DEFAULT_WORK_DIR.to_string(), |w| {
                    work_dir(errs, w, field("work_dir"));
                    w.get_ref().clone()
                });
            for o in &h.ssh_options {
                ssh_option(errs, o, field("ssh_options"));
            }
            HostDef {
                name,
                host: h.host.get_ref().clone(),
                user: h.user.as_ref().map(|u| u.get_ref().clone()),
                port: h.port.as_ref().map(|p| *p.get_ref()),
                identity_file,
                address: h.address.as_ref().map(|a| a.get_ref().clone()),
                work_dir,
                ssh_options: h.ssh_options.iter().map(|o| o.get_ref().clone()).collect(),
            }
        })
        .collect()
}

/// A host or user name: non-empty, no whitespace or control characters, and not starting
/// with '-' (ssh would read it as an option).
fn word(errs: &mut Errs, v: &Spanned<String>, field: String, what: &str) {
    let s = v.get_ref();
    if s.is_empty() {
        errs.at(v.span(), field, format!("{what} is empty"));
    } else if s.starts_with('-') {
        errs.at(
            v.span(),
            field,
            format!("{s:?} starts with '-', which ssh would read as an option"),
        );
    } else if s
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '@' && what == "user")
    {
        errs.at(
            v.span(),
            field,
            format!("{s:?} contains whitespace or a control character"),
        );
    }
}

/// An absolute path (or one under the SSH user's home, `~/…`) made of characters that need
/// no quoting in a remote shell. Who owns it and who can write it is checked on the host.
fn work_dir(errs: &mut Errs, v: &Spanned<String>, field: String) {
    let s = v.get_ref();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+".contains(c);
    let s = s
        .strip_prefix('~')
        .filter(|r| r.starts_with('/'))
        .unwrap_or(s);
    if !s.starts_with('/') {
        errs.at(
            v.span(),
            field,
            format!(
                "{:?} must be an absolute path or start with ~/",
                v.get_ref()
            ),
        );
    } else if !s.chars().all(plain) || s.split('/').any(|p| p == "..") {
        errs.at(
            v.span(),
            field,
            format!(
                "{:?}: use letters, digits and '/._-+' only, without '..'",
                v.get_ref()
            ),
        );
    }
}

/// "Key=Value", as `ssh -o` takes it.
fn ssh_option(errs: &mut Errs, v: &Spanned<String>, field: String) {
    let s = v.get_ref();
    let ok = match s.split_once('=') {
        Some((k, _)) => !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()),
        None => false,
    };
    if !ok || s.chars().any(char::is_control) {
        errs.at(
            v.span(),
            field,
            format!("{s:?} is not an ssh option of the form Key=Value"),
        );
    }
}

/// A profile's placement: None when it names neither `server_host` nor `loadgen_hosts`.
pub(super) fn placement(
    errs: &mut Errs,
    p: &Profile,
    hosts: &[HostDef],
    field: impl Fn(&str) -> String,
) -> Option<Placement> {
    if p.server_host.is_none() && p.loadgen_hosts.is_none() {
        return None;
    }
    let known = |errs: &mut Errs, v: &Spanned<String>, f: String| {
        let n = v.get_ref();
        if n != LOCAL_HOST && !hosts.iter().any(|h| &h.name == n) {
            let defined: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
            errs.at(
                v.span(),
                f,
                format!(
                    "unknown host {n:?} (defined: \"local\"{}{})",
                    if defined.is_empty() { "" } else { ", " },
                    defined.join(", ")
                ),
            );
        }
        n.clone()
    };
    let server_host = match &p.server_host {
        Some(s) => known(errs, s, field("server_host")),
        None => LOCAL_HOST.to_string(),
    };
    let loadgen_hosts = match &p.loadgen_hosts {
        None => vec![LOCAL_HOST.to_string()],
        Some(list) => {
            if list.get_ref().is_empty() {
                errs.at(
                    list.span(),
                    field("loadgen_hosts"),
                    "needs at least one host",
                );
            } else if list.get_ref().len() > MAX_LOADGEN_HOSTS {
                errs.at(
                    list.span(),
                    field("loadgen_hosts"),
                    format!("at most {MAX_LOADGEN_HOSTS} generator hosts"),
                );
            }
            let mut seen = BTreeSet::new();
            list.get_ref()
                .iter()
                .map(|h| {
                    let n = known(errs, h, field("loadgen_hosts"));
                    if !seen.insert(n.clone()) {
                        errs.at(
                            h.span(),
                            field("loadgen_hosts"),
                            format!("{n:?} is listed twice"),
                        );
                    }
                    n
                })
                .collect()
        }
    };
    Some(Placement {
        server_host,
        loadgen_hosts,
    })
}

/// Every level of a scenario that runs on a multi-host profile must split between its
/// generator hosts (at least one connection each), and churn cells (the runner's own client
/// against a local service) cannot run there.
pub(super) fn check_split(
    errs: &mut Errs,
    raw: &[Scenario],
    scenarios: &[ScenarioDef],
    profiles: &[ProfileDef],
) {
    for (i, (r, s)) in raw.iter().zip(scenarios).enumerate() {
        for p in profiles {
            let Some(pl) = &p.placement else { continue };
            if s.profiles.as_ref().is_some_and(|ps| !ps.contains(&p.name)) {
                continue;
            }
            let n = pl.loadgen_hosts.len() as u32;
            for level in &s.levels {
                let problem = if level.churn.is_some() {
                    Some(
                        "a churn level runs the runner's own client against a service on \
                         this machine; it cannot run on a multi-host profile (restrict the \
                         scenario's `profiles`)"
                            .to_string(),
                    )
                } else {
                    let conns = match level.model {
                        LoadModel::Closed { connections, .. }
                        | LoadModel::Open { connections, .. } => connections,
                    };
                    (conns < n).then(|| {
                        format!(
                            "level {} has {conns} connection(s), fewer than the {n} generator \
                         hosts of profile {:?} it is split between",
                            level.label, p.name
                        )
                    })
                };
                if let Some(m) = problem {
                    errs.at(r.load.model.span(), format!("scenarios[{i}].load"), m);
                }
            }
        }
    }
}

/// A server the suite did not write (`command`) cannot run on a multi-host profile: the
/// agent on the server host starts suite services only (`--listen`/`--workers`, no
/// placeholders). Every service runs every scenario on every profile the scenario allows,
/// so the `command` is refused when any scenario runs on a multi-host profile.
pub(super) fn check_external(
    errs: &mut Errs,
    raw: &[Service],
    scenarios: &[ScenarioDef],
    profiles: &[ProfileDef],
) {
    let multi_host = profiles
        .iter()
        .filter(|p| p.placement.is_some())
        .find_map(|p| {
            let s = scenarios
                .iter()
                .find(|s| s.profiles.as_ref().is_none_or(|ps| ps.contains(&p.name)))?;
            Some((p.name.as_str(), s.name.as_str()))
        });
    let Some((profile, scenario)) = multi_host else {
        return;
    };
    for (i, s) in raw.iter().enumerate() {
        let Some(c) = &s.command else { continue };
        errs.at(
            c.span(),
            format!("services[{i}].command"),
            format!(
                "a `command` service cannot run on multi-host profile {profile:?} (scenario \
                 {scenario:?} runs there): the server host's agent starts suite services only; \
                 restrict the multi-host profile to scenarios of their own (the scenarios' \
                 `profiles`) in a matrix file without `command` services"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GOOD, parse_str};
    use super::*;

    fn with(extra: &str) -> String {
        format!("{GOOD}{extra}")
    }

    #[test]
    fn hosts_and_placement_are_read() {
        let m = parse_str(
            &with(
                r#"
[[hosts]]
name = "srv"
host = "127.0.10.1"
user = "bench"
port = 2222
ssh_options = ["UserKnownHostsFile=/dev/null"]

[[hosts]]
name = "gen1"
host = "gen1.example"
address = "127.0.10.2"

[[profiles]]
name = "split"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "srv"
loadgen_hosts = ["gen1", "local"]
"#,
            )
            .replace("[1, 16]", "[2, 16]"),
        )
        .unwrap();
        assert_eq!(m.hosts.len(), 2);
        assert_eq!(m.hosts[0].destination(), "bench@127.0.10.1");
        assert_eq!(m.hosts[0].work_dir, DEFAULT_WORK_DIR);
        assert_eq!(m.profiles[0].placement, None);
        let p = m.profiles[1].placement.as_ref().unwrap();
        assert_eq!(p.server_host, "srv");
        assert_eq!(p.loadgen_hosts, ["gen1", "local"]);
    }

    #[test]
    fn a_command_service_on_a_multi_host_profile_is_refused_with_its_position() {
        let text = with(
            r#"
[[services]]
name = "ext"
command = ["srv", "--port", "{port}"]

[[hosts]]
name = "srv"
host = "127.0.10.1"

[[profiles]]
name = "remote"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "srv"
"#,
        );
        let e = parse_str(&text).unwrap_err();
        let m: Vec<String> = e.0.iter().map(ToString::to_string).collect();
        let line = text
            .lines()
            .position(|l| l.starts_with("command = "))
            .unwrap()
            + 1;
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with(&format!("m.toml:{line}:11: services[1].command: a `command` service cannot run on multi-host profile \"remote\"")),
            "{m:?}"
        );
        // The same service with the multi-host profile kept to scenarios of its own: no
        // scenario runs there, nothing to refuse.
        let local_only = text
            .replace(
                "load = { model = \"closed\", connections = [1, 16] }",
                "load = { model = \"closed\", connections = [1, 16] }\nprofiles = [\"pinned\"]",
            )
            .replace(
                "max_connections = 4 }",
                "max_connections = 4 }\nprofiles = [\"pinned\"]",
            );
        assert!(
            parse_str(&local_only).is_ok(),
            "{:?}",
            parse_str(&local_only).err()
        );
    }
}
