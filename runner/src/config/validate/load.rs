//! `scenarios[].load`: one level per connection count (closed model) or rate (open model),
//! each within loadgen's limits and this machine's, each label once; a field of the other
//! model is an error.

use std::collections::BTreeSet;
use std::ops::Range;

use loadgen::{LoadModel, Protocol};
use toml::Spanned;

use super::Errs;
use super::bounds::{MAX_PIPELINE, MAX_RATE_PER_S};
use super::host::Host;
use crate::config::Level;
use crate::config::schema::{Load, ModelKind};

/// What every level's connection count must fit: this machine, and one connection per
/// loadgen thread at least (loadgen refuses fewer).
pub(super) struct Fit<'a> {
    pub host: &'a Host,
    pub loadgen_threads: u32,
}

impl Fit<'_> {
    fn check(&self, errs: &mut Errs, span: Range<usize>, field: &str, connections: u32) {
        if connections == 0 {
            return; // reported with the list
        }
        self.host
            .check_connections(errs, span.clone(), field, connections);
        if self.loadgen_threads > connections {
            errs.at(
                span,
                field,
                format!(
                    "fewer connections ({connections}) than loadgen_threads ({}): every \
                     loadgen thread needs a connection",
                    self.loadgen_threads
                ),
            );
        }
    }
}

/// `field("connections")` names a field of this load, e.g. "scenarios[0].load.connections".
pub(super) fn levels(
    errs: &mut Errs,
    load: &Load,
    protocol: Protocol,
    fit: &Fit,
    field: impl Fn(&str) -> String,
) -> Vec<Level> {
    misplaced(errs, load, &field);
    let (levels, list) = match load.model.get_ref() {
        ModelKind::Closed => {
            let pipeline = in_flight(errs, load, protocol, &field);
            let levels = closed(errs, load, pipeline, protocol, fit, &field);
            (levels, field("connections"))
        }
        ModelKind::Open => {
            let connections = max_connections(errs, load, fit, &field);
            (open(errs, load, connections, &field), field("rates_per_s"))
        }
        ModelKind::Churn => (
            super::churn::levels(errs, load, fit.host, &field),
            field("connections"),
        ),
    };
    distinct(errs, levels, &list)
}

/// A load field: its name, where it is written (if it is), the models that take it.
type Field<'a> = (&'a str, Option<Range<usize>>, &'a [ModelKind]);

/// Fields of another model.
fn misplaced(errs: &mut Errs, load: &Load, field: &impl Fn(&str) -> String) {
    use ModelKind::{Churn, Closed, Open};
    let fields: [Field; 6] = [
        (
            "connections",
            load.connections.as_ref().map(Spanned::span),
            &[Closed, Churn],
        ),
        (
            "pipeline",
            load.pipeline.as_ref().map(Spanned::span),
            &[Closed],
        ),
        (
            "streams",
            load.streams.as_ref().map(Spanned::span),
            &[Closed],
        ),
        (
            "rates_per_s",
            load.rates_per_s.as_ref().map(Spanned::span),
            &[Open],
        ),
        (
            "max_connections",
            load.max_connections.as_ref().map(Spanned::span),
            &[Open],
        ),
        ("cycles", load.cycles.as_ref().map(Spanned::span), &[Churn]),
    ];
    let model = *load.model.get_ref();
    let mine = match model {
        Closed => "connections, and pipeline or streams",
        Open => "rates_per_s and max_connections",
        Churn => "connections and cycles",
    };
    for (name, span, models) in fields {
        if let Some(span) = span
            && !models.contains(&model)
        {
            let names: Vec<String> = models
                .iter()
                .map(|m| format!("\"{}\"", model_name(*m)))
                .collect();
            errs.at(
                span,
                field(name),
                format!(
                    "only for model = {} (this one takes {mine})",
                    names.join(" or ")
                ),
            );
        }
    }
}

fn model_name(m: ModelKind) -> &'static str {
    match m {
        ModelKind::Closed => "closed",
        ModelKind::Open => "open",
        ModelKind::Churn => "churn",
    }
}

/// Requests in flight per connection, `1..=MAX_PIPELINE`, default 1: HTTP/1.1's
/// `pipeline` (per write), HTTP/2's `streams`; each only with its protocol.
fn in_flight(
    errs: &mut Errs,
    load: &Load,
    protocol: Protocol,
    field: &impl Fn(&str) -> String,
) -> u32 {
    let (mine, theirs, other) = if protocol.is_h2() {
        (&load.streams, &load.pipeline, "pipeline")
    } else {
        (&load.pipeline, &load.streams, "streams")
    };
    if let Some(t) = theirs {
        let why = if protocol.is_h2() {
            "HTTP/2 does not pipeline: its requests in flight are `streams`"
        } else {
            "streams are HTTP/2's: give protocol = \"h2\" (HTTP/1.1 pipelines: `pipeline`)"
        };
        errs.at(t.span(), field(other), why);
    }
    let Some(p) = mine else {
        return 1;
    };
    let n = *p.get_ref();
    if !(1..=MAX_PIPELINE).contains(&n) {
        let name = if protocol.is_h2() {
            "streams"
        } else {
            "pipeline"
        };
        errs.at(
            p.span(),
            field(name),
            format!("must be between 1 and {MAX_PIPELINE} (loadgen's limit); got {n}"),
        );
    }
    n
}

/// Connections of an open-loop generator: required, at least 1, and fitting.
fn max_connections(
    errs: &mut Errs,
    load: &Load,
    fit: &Fit,
    field: &impl Fn(&str) -> String,
) -> u32 {
    let field = field("max_connections");
    match &load.max_connections {
        Some(c) if *c.get_ref() > 0 => {
            fit.check(errs, c.span(), &field, *c.get_ref());
            *c.get_ref()
        }
        Some(c) => {
            errs.at(c.span(), field, "must be >= 1");
            0
        }
        None => {
            errs.at(
                load.model.span(),
                field,
                "open model needs max_connections >= 1",
            );
            0
        }
    }
}

/// One level per connection count.
fn closed(
    errs: &mut Errs,
    load: &Load,
    pipeline: u32,
    protocol: Protocol,
    fit: &Fit,
    field: &impl Fn(&str) -> String,
) -> Vec<Spanned<Level>> {
    let field = field("connections");
    super::connections::list(errs, load, "closed", &field)
        .iter()
        .map(|c| {
            let connections = *c.get_ref();
            fit.check(errs, c.span(), &field, connections);
            let label = if protocol.is_h2() {
                format!("c{connections}s{pipeline}")
            } else if pipeline > 1 {
                format!("c{connections}p{pipeline}")
            } else {
                format!("c{connections}")
            };
            let model = LoadModel::Closed {
                connections,
                pipeline,
            };
            Spanned::new(
                c.span(),
                Level {
                    label,
                    model,
                    churn: None,
                },
            )
        })
        .collect()
}

/// One level per rate, each in `(0, MAX_RATE_PER_S]`.
fn open(
    errs: &mut Errs,
    load: &Load,
    connections: u32,
    field: &impl Fn(&str) -> String,
) -> Vec<Spanned<Level>> {
    let field = field("rates_per_s");
    let Some(rates) = &load.rates_per_s else {
        errs.at(
            load.model.span(),
            field,
            "open model needs rates_per_s = [..]",
        );
        return Vec::new();
    };
    if rates.get_ref().is_empty() {
        errs.at(rates.span(), &field, "needs at least one rate, each > 0");
    }
    rates
        .get_ref()
        .iter()
        .map(|r| {
            let rate_per_s = *r.get_ref();
            if !(rate_per_s > 0.0 && rate_per_s.is_finite()) {
                errs.at(r.span(), &field, "each rate must be > 0");
            } else if rate_per_s > MAX_RATE_PER_S {
                errs.at(
                    r.span(),
                    &field,
                    format!("{rate_per_s} per second: must be at most {MAX_RATE_PER_S} per second"),
                );
            }
            let level = Level {
                label: rate_label(rate_per_s),
                model: LoadModel::Open {
                    rate_per_s,
                    connections,
                    coalesce_us: loadgen::DEFAULT_COALESCE_US,
                },
                churn: None,
            };
            Spanned::new(r.span(), level)
        })
        .collect()
}

fn rate_label(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("r{}", rate as u64)
    } else {
        format!("r{rate}")
    }
}

/// Each label once: a repeated level would run the same cell twice under one key.
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
