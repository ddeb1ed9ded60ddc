//! `[[scenarios]]`: at least one, each with a request path, load levels that fit its load
//! model, and only known profiles in its `profiles` restriction.

use std::collections::BTreeSet;

use loadgen::LoadModel;
use toml::Spanned;

use super::Errs;
use super::names::Names;
use crate::config::schema::{Load, ModelKind, Scenario};
use crate::config::{Level, ProfileDef, ScenarioDef};

pub(super) fn check(
    errs: &mut Errs,
    scenarios: &[Scenario],
    profiles: &[ProfileDef],
) -> Vec<ScenarioDef> {
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
            let levels = levels(errs, i, &s.load);
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

/// Path and query of the request: absolute.
fn request_path(errs: &mut Errs, path: &Spanned<String>, field: String) {
    if !path.get_ref().starts_with('/') {
        errs.at(path.span(), field, "must start with '/'");
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

/// One level per connection count (closed) or rate (open); misplaced fields are errors.
fn levels(errs: &mut Errs, i: usize, load: &Load) -> Vec<Level> {
    let field = |f: &str| format!("scenarios[{i}].load.{f}");
    match load.model.get_ref() {
        ModelKind::Closed => closed(errs, load, field),
        ModelKind::Open => open(errs, load, field),
    }
}

fn closed(errs: &mut Errs, load: &Load, field: impl Fn(&str) -> String) -> Vec<Level> {
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
    }
    let Some(conns) = &load.connections else {
        errs.at(
            model_span,
            field("connections"),
            "closed model needs connections = [..]",
        );
        return Vec::new();
    };
    if conns.get_ref().is_empty() || conns.get_ref().contains(&0) {
        errs.at(
            conns.span(),
            field("connections"),
            "needs at least one level, each >= 1",
        );
    }
    conns
        .get_ref()
        .iter()
        .map(|&c| Level {
            label: if pipeline > 1 {
                format!("c{c}p{pipeline}")
            } else {
                format!("c{c}")
            },
            model: LoadModel::Closed {
                connections: c,
                pipeline,
            },
        })
        .collect()
}

fn open(errs: &mut Errs, load: &Load, field: impl Fn(&str) -> String) -> Vec<Level> {
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
    }
    let Some(rates) = &load.rates_per_s else {
        errs.at(
            model_span,
            field("rates_per_s"),
            "open model needs rates_per_s = [..]",
        );
        return Vec::new();
    };
    if rates.get_ref().is_empty() || rates.get_ref().iter().any(|r| !(*r > 0.0 && r.is_finite())) {
        errs.at(
            rates.span(),
            field("rates_per_s"),
            "needs at least one rate, each > 0",
        );
    }
    rates
        .get_ref()
        .iter()
        .map(|&r| Level {
            label: rate_label(r),
            model: LoadModel::Open {
                rate_per_s: r,
                connections: max_conns,
            },
        })
        .collect()
}
