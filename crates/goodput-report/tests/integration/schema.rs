//! The committed JSON Schema, docs/schema/goodput-v1.schema.json, is the
//! one derived from the result types: a change to a type that changes the
//! documents changes the schema, or this test fails.

use goodput_report::schema::SCHEMA_PATH;
use std::path::Path;

#[test]
fn the_committed_schema_is_the_one_the_types_give() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(SCHEMA_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let derived = goodput_report::document_schema_text();
    assert!(
        committed == derived,
        "{SCHEMA_PATH} is not the schema the result types give (a type changed, or the file was edited by \
         hand); regenerate it from the repository's root with\n\n    \
         cargo run -q -p goodput-report --example schema > {SCHEMA_PATH}\n\nand commit it with the change"
    );
}

#[test]
fn the_schema_is_draft_2020_12_and_tells_the_kinds_apart() {
    let s = goodput_report::document_schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let kinds: Vec<&str> = s["oneOf"].as_array().unwrap().iter().map(|k| k["$ref"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "#/$defs/RunResult",
            "#/$defs/SweepResult",
            "#/$defs/Comparison",
            "#/$defs/FrontierResult",
            "#/$defs/FrontierComparison"
        ]
    );
    let defs = &s["$defs"];
    assert_eq!(defs["RunResult"]["properties"]["kind"]["enum"], serde_json::json!(["bench", "estimate", "import"]));
    assert_eq!(defs["SweepResult"]["properties"]["kind"]["const"], "sweep");
    assert_eq!(defs["Comparison"]["properties"]["kind"]["const"], "compare");
    assert_eq!(defs["FrontierResult"]["properties"]["kind"]["const"], "frontier");
    assert_eq!(defs["FrontierComparison"]["properties"]["kind"]["const"], "frontier_compare");
    for d in ["RunResult", "SweepResult", "Comparison", "FrontierResult", "FrontierComparison"] {
        assert_eq!(defs[d]["properties"]["schema"]["const"], goodput_core::SCHEMA, "{d}");
        let required = defs[d]["required"].as_array().unwrap();
        assert!(required.contains(&"schema".into()) && required.contains(&"kind".into()), "{d}: {required:?}");
    }
    assert!(defs["RunResult"]["required"].as_array().unwrap().contains(&"summary".into()));
    assert!(defs["SweepPoint"]["required"].as_array().unwrap().contains(&"result".into()));
}
