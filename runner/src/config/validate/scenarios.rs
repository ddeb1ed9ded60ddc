//! `[[scenarios]]`: at least one, each with a unique name, a request path, load levels (see
//! `load`) and only known profiles in its `profiles` restriction.

use std::collections::BTreeSet;

use toml::Spanned;

use super::Errs;
use super::host::Host;
use super::load::{self, Fit};
use super::names::Names;
use crate::config::schema::Scenario;
use crate::config::{ProfileDef, ScenarioDef};

pub(super) fn check(
    errs: &mut Errs,
    scenarios: &[Scenario],
    profiles: &[ProfileDef],
    host: &Host,
    loadgen_threads: u32,
) -> Vec<ScenarioDef> {
    let fit = Fit {
        host,
        loadgen_threads,
    };
    if scenarios.is_empty() {
        errs.at(0..0, "scenarios", "no [[scenarios]] defined");
    }
    let known: BTreeSet<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    let mut names = Names::default();
    scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let field = |f: &str| format!("scenarios[{i}].{f}");
            let name = names.add(errs, &s.name, field("name"));
            request_path(errs, &s.path, field("path"));
            let protocol = protocol(errs, s, &field);
            let levels = load::levels(errs, &s.load, protocol, &fit, |f| {
                field(&format!("load.{f}"))
            });
            keepalive_for_pipelining(errs, s, field("keepalive"));
            let headers = s
                .headers
                .as_ref()
                .map(|h| super::headers::check(errs, h, s.keepalive, field("headers")))
                .unwrap_or_default();
            if let Some(ps) = &s.profiles {
                known_profiles(errs, ps, field("profiles"), &known);
            }
            ScenarioDef {
                name,
                path: s.path.get_ref().clone(),
                keepalive: s.keepalive,
                expect_body_bytes: s.expect_body_bytes,
                headers,
                protocol,
                levels,
                profiles: s.profiles.as_ref().map(|p| p.get_ref().clone()),
            }
        })
        .collect()
}

/// Path and query of the request: absolute, and printable ASCII without spaces, since it
/// goes into the request line as is.
fn request_path(errs: &mut Errs, path: &Spanned<String>, field: String) {
    let p = path.get_ref();
    if !p.starts_with('/') {
        errs.at(path.span(), field, "must start with '/'");
    } else if !p.bytes().all(|b| b.is_ascii_graphic()) {
        errs.at(
            path.span(),
            field,
            "must be printable ASCII without spaces (percent-encode the rest): it is sent \
             in the request line as is",
        );
    }
}

/// `protocol` ("http/1.1" or "h2") and `tls` together name the wire protocol: h2 without TLS
/// is h2c (prior knowledge), with TLS ALPN settles it. HTTP/2 keeps its connections open and
/// has no churn model; over TLS, HTTP/1.1 is not pipelined and churn is not built.
fn protocol(errs: &mut Errs, s: &Scenario, field: &impl Fn(&str) -> String) -> loadgen::Protocol {
    use loadgen::Protocol;
    let tls = s.tls.as_ref().is_some_and(|t| *t.get_ref());
    let name = s.protocol.as_ref().map(|p| p.get_ref().as_str());
    let span = || s.protocol.as_ref().map(|p| p.span()).unwrap_or_default();
    let protocol = match (name, tls) {
        (None | Some("http/1.1"), false) => Protocol::Http11,
        (None | Some("http/1.1"), true) => Protocol::Http11Tls,
        (Some("h2"), false) => Protocol::H2c,
        (Some("h2"), true) => Protocol::H2Tls,
        (Some(other), _) => {
            errs.at(
                span(),
                field("protocol"),
                format!("unknown protocol {other:?}: \"http/1.1\" or \"h2\" (TLS is `tls = true`)"),
            );
            return Protocol::Http11;
        }
    };
    if protocol == Protocol::Http11Tls {
        if let Some(p) = &s.load.pipeline
            && *p.get_ref() > 1
        {
            errs.at(
                p.span(),
                field("load.pipeline"),
                "tls = true with a pipelined load: HTTP/1.1 over TLS is measured one request at \
                 a time per connection (what TLS clients send); use protocol = \"h2\" with \
                 `streams` for requests in flight on one TLS connection",
            );
        }
        if *s.load.model.get_ref() == crate::config::schema::ModelKind::Churn {
            errs.at(
                s.load.model.span(),
                field("load.model"),
                "churn opens and closes cleartext HTTP/1.1 connections itself: not with tls = true",
            );
        }
    }
    if protocol.is_h2() {
        if !s.keepalive {
            errs.at(
                span(),
                field("keepalive"),
                "HTTP/2 keeps its connections open: keepalive = false is HTTP/1.1's",
            );
        }
        if *s.load.model.get_ref() == crate::config::schema::ModelKind::Churn {
            errs.at(
                s.load.model.span(),
                field("load.model"),
                "churn opens and closes HTTP/1.1 connections itself: not with protocol = \"h2\"",
            );
        }
    }
    protocol
}

/// Pipelined requests need a connection that stays open (loadgen refuses otherwise).
fn keepalive_for_pipelining(errs: &mut Errs, s: &Scenario, field: String) {
    if let Some(p) = &s.load.pipeline
        && *p.get_ref() > 1
        && !s.keepalive
    {
        errs.at(p.span(), field, "pipeline > 1 needs keepalive = true");
    }
}

fn known_profiles(
    errs: &mut Errs,
    ps: &Spanned<Vec<String>>,
    field: String,
    known: &BTreeSet<&str>,
) {
    for p in ps.get_ref() {
        if !known.contains(p.as_str()) {
            errs.at(ps.span(), field.clone(), format!("unknown profile {p:?}"));
        }
    }
}
