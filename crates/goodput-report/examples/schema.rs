//! Prints the JSON Schema of goodput/v1 documents, as committed in
//! docs/schema/goodput-v1.schema.json. After changing a result type:
//!
//! ```text
//! cargo run -q -p goodput-report --example schema > docs/schema/goodput-v1.schema.json
//! ```

fn main() {
    print!("{}", goodput_report::document_schema_text());
}
