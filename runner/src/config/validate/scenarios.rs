//! `[[scenarios]]`: at least one, each with a request path, load levels that fit its load
//! model, this machine and loadgen (each level once), and only known profiles in its
//! `profiles` restriction.

use std::collections::BTreeSet;

use loadgen::LoadModel;
use toml::Spanned;

use super::Errs;
use super::bounds::{MAX_PIPELINE, MAX_RATE_PER_S};
use super::host::Host;
use super::names::Names;
use crate::config::schema::{Load, ModelKind, Scenario};
use crate::config::{Level, ProfileDef, ScenarioDef};

/// What every level's connection count must fit.
struct Fit<'a> {
    host: &'a Host,
    loadgen_threads: u32,
}

impl Fit<'_> {
    fn check(&self, errs: &mut Errs, span: std::ops::Range<usize>, field: &str, n: u32) {
        if n == 0 {
            return; // reported where zero is
        }
        self.host.check_connections(errs, span.clone(), field, n);
        if self.loadgen_threads > n {
            errs.at(
                span,
                field,
                format!(
                    "fewer connections ({n}) than loadgen_threads ({}): every loadgen thread \
                     needs a connection",
                    self.loadgen_threads
                ),
            );
        }
    }
}

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
            let levels = levels(errs, i, &s.load, &fit);
            keepalive_for_pipelining(errs, s, field("keepalive"));
            if let Some(ps) = &s.profiles {
                known_profiles(errs, ps, field("profiles"), &known);
            }
            ScenarioDef {
                name,
                path: s.path.get_ref().clone(),
                keepalive: s.keepalive,
                expect_body_bytes: s.expect_body_bytes,
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

fn rate_label(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("r{}", rate as u64)
    } else {
        format!("r{rate}")
    }
}

/// One level per connection count (closed) or rate (open), each label once; misplaced
/// fields are errors.
fn levels(errs: &mut Errs, i: usize, load: &Load, fit: &Fit) -> Vec<Level> {
    let field = |f: &str| format!("scenarios[{i}].load.{f}");
    let (levels, list_field) = match load.model.get_ref() {
        ModelKind::Closed => (closed(errs, load, fit, field), field("connections")),
        ModelKind::Open => (open(errs, load, fit, field), field("rates_per_s")),
    };
    distinct(errs, levels, &list_field)
}

/// Each level label once: a repeated one would run the same cell twice under one key.
fn distinct(errs: &mut Errs, levels: Vec<Spanned<Level>>, field: &str) -> Vec<Level> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for l in levels {
        let span = l.span();
        let l = l.into_inner();
        if seen.insert(l.label.clone()) {
            out.push(l);
        } else {
            errs.at(
                span,
                field,
                format!("level {} appears twice; list each level once", l.label),
            );
        }
    }
    out
}

fn closed(
    errs: &mut Errs,
    load: &Load,
    fit: &Fit,
    field: impl Fn(&str) -> String,
) -> Vec<Spanned<Level>> {
    let model_span = load.model.span();
    if let Some(r) = &load.rates_per_s {
        errs.at(r.span(), field("rates_per_s"), "only for model = \"open\"");
    }
    if let Some(r) = &load.max_connections {
        errs.at(
            r.span(),
            field("max_connections"),
            "only for model = \"open\"",
        );
    }
    let pipeline = load.pipeline.as_ref().map_or(1, |p| *p.get_ref());
    if pipeline == 0 {
        let span = load
            .pipeline
            .as_ref()
            .map_or(model_span.clone(), |p| p.span());
        errs.at(span, field("pipeline"), "must be >= 1");
    } else if pipeline > MAX_PIPELINE {
        let span = load
            .pipeline
            .as_ref()
            .map_or(model_span.clone(), |p| p.span());
        errs.at(
            span,
            field("pipeline"),
            format!("must be at most {MAX_PIPELINE} (loadgen's limit)"),
        );
    }
    let Some(conns) = &load.connections else {
        errs.at(
            model_span,
            field("connections"),
            "closed model needs connections = [..]",
        );
        return Vec::new();
    };
    if conns.get_ref().is_empty() || conns.get_ref().iter().any(|c| *c.get_ref() == 0) {
        errs.at(
            conns.span(),
            field("connections"),
            "needs at least one level, each >= 1",
        );
    }
    conns
        .get_ref()
        .iter()
        .map(|c| {
            let connections = *c.get_ref();
            fit.check(errs, c.span(), &field("connections"), connections);
            let label = if pipeline > 1 {
                format!("c{connections}p{pipeline}")
            } else {
                format!("c{connections}")
            };
            let model = LoadModel::Closed {
                connections,
                pipeline,
            };
            Spanned::new(c.span(), Level { label, model })
        })
        .collect()
}

fn open(
    errs: &mut Errs,
    load: &Load,
    fit: &Fit,
    field: impl Fn(&str) -> String,
) -> Vec<Spanned<Level>> {
    let model_span = load.model.span();
    if let Some(r) = &load.connections {
        errs.at(
            r.span(),
            field("connections"),
            "open model uses max_connections",
        );
    }
    if let Some(r) = &load.pipeline {
        errs.at(r.span(), field("pipeline"), "only for model = \"closed\"");
    }
    let max_conns = load.max_connections.as_ref().map_or(0, |c| *c.get_ref());
    if max_conns == 0 {
        let span = load
            .max_connections
            .as_ref()
            .map_or(model_span.clone(), |c| c.span());
        errs.at(
            span,
            field("max_connections"),
            "open model needs max_connections >= 1",
        );
    } else if let Some(c) = &load.max_connections {
        fit.check(errs, c.span(), &field("max_connections"), max_conns);
    }
    let Some(rates) = &load.rates_per_s else {
        errs.at(
            model_span,
            field("rates_per_s"),
            "open model needs rates_per_s = [..]",
        );
        return Vec::new();
    };
    if rates.get_ref().is_empty() {
        errs.at(
            rates.span(),
            field("rates_per_s"),
            "needs at least one rate, each > 0",
        );
    }
    for r in rates.get_ref() {
        let rate = *r.get_ref();
        if !(rate > 0.0 && rate.is_finite()) {
            errs.at(r.span(), field("rates_per_s"), "each rate must be > 0");
        } else if rate > MAX_RATE_PER_S {
            errs.at(
                r.span(),
                field("rates_per_s"),
                format!("{rate} per second: must be at most {MAX_RATE_PER_S} per second"),
            );
        }
    }
    rates
        .get_ref()
        .iter()
        .map(|r| {
            let rate_per_s = *r.get_ref();
            let level = Level {
                label: rate_label(rate_per_s),
                model: LoadModel::Open {
                    rate_per_s,
                    connections: max_conns,
                },
            };
            Spanned::new(r.span(), level)
        })
        .collect()
}
