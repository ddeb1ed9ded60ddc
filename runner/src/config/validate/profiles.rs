//! `[[profiles]]`: at least one, each with cpusets this process may use, a CPU quota that
//! fits its server CPUs, a memory limit a service can start in, and a worker count.

use toml::Spanned;

use super::Errs;
use super::bounds::{MAX_MEMORY_MIB, MAX_THREADS};
use super::names::Names;
use crate::config::schema::Profile;
use crate::config::{HostDef, LOCAL_HOST, ProfileDef};
use crate::limits::cpus::{format_cpus, parse_cpus};
use crate::results::schema::ProfileLimits;

/// `allowed`: the CPUs in this process's affinity mask. A role placed on another host
/// (`server_host`, `loadgen_hosts`) has its CPUs checked on that host when the run starts.
pub(super) fn check(
    errs: &mut Errs,
    profiles: &[Profile],
    allowed: &[u32],
    hosts: &[HostDef],
) -> Vec<ProfileDef> {
    if profiles.is_empty() {
        errs.at(0..0, "profiles", "no [[profiles]] defined");
    }
    let mut names = Names::default();
    profiles
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let field = |f: &str| format!("profiles[{i}].{f}");
            let name = names.add(errs, &p.name, field("name"));
            let placement = super::hosts::placement(errs, p, hosts, field);
            let local = |h: Option<&str>| h.is_none_or(|h| h == LOCAL_HOST);
            let server_local = local(placement.as_ref().map(|p| p.server_host.as_str()));
            let loadgen_local = placement
                .as_ref()
                .is_none_or(|p| p.loadgen_hosts.iter().any(|h| h == LOCAL_HOST));
            let all: Vec<u32> = (0..nix::sched::CpuSet::count() as u32).collect();
            let mine = |is_local: bool| if is_local { allowed } else { all.as_slice() };
            let server_cpus = cpus(
                errs,
                &p.server_cpus,
                field("server_cpus"),
                mine(server_local),
            );
            let loadgen_cpus = cpus(
                errs,
                &p.loadgen_cpus,
                field("loadgen_cpus"),
                mine(loadgen_local),
            );
            let cpu_quota = quota(errs, p.cpu_quota.as_ref(), field("cpu_quota"), &server_cpus);
            let memory_max_mib = memory(errs, p.memory_max_mib.as_ref(), field("memory_max_mib"));
            let workers = workers(errs, p.workers.as_ref(), field("workers"), &server_cpus);
            ProfileDef {
                name,
                limits: ProfileLimits {
                    server_cpus,
                    loadgen_cpus,
                    cpu_quota,
                    memory_max_bytes: memory_max_mib.map(|m| m * 1024 * 1024),
                    workers,
                },
                placement,
            }
        })
        .collect()
}

/// A CPU list whose CPUs are all in `allowed`.
fn cpus(errs: &mut Errs, s: &Spanned<String>, field: String, allowed: &[u32]) -> Vec<u32> {
    match parse_cpus(s.get_ref()) {
        Err(e) => {
            errs.at(s.span(), field, e);
            Vec::new()
        }
        Ok(v) => {
            let missing: Vec<u32> = v.iter().copied().filter(|c| !allowed.contains(c)).collect();
            if !missing.is_empty() {
                errs.at(
                    s.span(),
                    field,
                    format!(
                        "CPU(s) {} not available here (usable CPUs: {})",
                        format_cpus(&missing),
                        format_cpus(allowed)
                    ),
                );
            }
            v
        }
    }
}

/// CPUs of quota: positive, and no more than the server CPUs it runs on.
fn quota(
    errs: &mut Errs,
    q: Option<&Spanned<f64>>,
    field: String,
    server_cpus: &[u32],
) -> Option<f64> {
    let q = q?;
    let v = *q.get_ref();
    if !(v > 0.0 && v.is_finite()) {
        errs.at(q.span(), field, "must be > 0 (CPUs)");
    } else if !server_cpus.is_empty() && v > server_cpus.len() as f64 {
        errs.at(
            q.span(),
            field,
            format!(
                "quota of {v} CPUs exceeds the {} server CPU(s) it can run on",
                server_cpus.len()
            ),
        );
    }
    Some(v)
}

/// Memory limit in MiB: at least 8 (a service cannot start in less), at most
/// `MAX_MEMORY_MIB`.
fn memory(errs: &mut Errs, m: Option<&Spanned<u64>>, field: String) -> Option<u64> {
    let m = m?;
    let mib = *m.get_ref();
    if mib < 8 {
        errs.at(m.span(), field, "must be at least 8 MiB");
    } else if mib > MAX_MEMORY_MIB {
        errs.at(
            m.span(),
            field,
            format!("must be at most {MAX_MEMORY_MIB} MiB"),
        );
    }
    Some(mib.min(MAX_MEMORY_MIB))
}

/// `--workers` for the service, `1..=MAX_THREADS`; default = one per server CPU.
fn workers(errs: &mut Errs, w: Option<&Spanned<u32>>, field: String, server_cpus: &[u32]) -> u32 {
    let Some(w) = w else {
        return server_cpus.len().max(1) as u32;
    };
    let n = *w.get_ref();
    if n == 0 {
        errs.at(w.span(), field, "must be >= 1");
    } else if n > MAX_THREADS {
        errs.at(
            w.span(),
            field,
            format!("must be at most {MAX_THREADS} (threads pinned to the server CPUs); got {n}"),
        );
    }
    n
}
