//! The JSON Schema (draft 2020-12) of every goodput/v1 document — a run
//! (`bench`, `estimate`), a sweep, a comparison, a frontier (`plan`) —
//! derived from the types that write them, so it cannot drift from what goodput writes. The
//! committed copy is `docs/schema/goodput-v1.schema.json`; regenerate it with
//! `cargo run -q -p goodput-report --example schema > docs/schema/goodput-v1.schema.json`.

use crate::compare::Comparison;
use goodput_core::doc::frontier::FrontierResult;
use goodput_core::doc::sweep::SweepResult;
use goodput_core::RunResult;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

/// Where the committed schema lives, from the repository's root.
pub const SCHEMA_PATH: &str = "docs/schema/goodput-v1.schema.json";

/// The schema of a goodput/v1 document: exactly one of a run, a sweep, a
/// comparison or a frontier, told apart by `kind`. Under the deserialize
/// contract: the fields a document may lack are those goodput reads without
/// (added within v1, or present only when they apply), so an older v1
/// document validates.
pub fn document_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let kinds = [
        generator.subschema_for::<RunResult>(),
        generator.subschema_for::<SweepResult>(),
        generator.subschema_for::<Comparison>(),
        generator.subschema_for::<FrontierResult>(),
        generator.subschema_for::<goodput_core::doc::overlay::FrontierComparison>(),
    ];
    let defs = generator.take_definitions(true);
    sorted(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "goodput/v1 result document",
        "description": "A result document of goodput: a run (`kind` bench or estimate), a sweep (`kind` sweep), a \
            comparison (`kind` compare), a frontier of configurations (`kind` frontier) or a predicted frontier beside a \
            measured one (`kind` frontier_compare), each with `schema` \
            goodput/v1. Derived from goodput's types; docs/result.md explains it.",
        "oneOf": kinds.iter().map(|s| s.as_value()).collect::<Vec<_>>(),
        "$defs": defs,
    }))
}

/// The schema as committed: pretty JSON with every object's keys sorted
/// (whatever serde_json's map order in the build), and a final newline.
pub fn document_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&document_schema()).expect("a JSON value always serialises");
    text.push('\n');
    text
}

/// `v` with the keys of every object in sorted order, so the text is the
/// same whether serde_json keeps insertion order or not.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}
