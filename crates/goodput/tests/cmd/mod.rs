//! Running the goodput binary from tests: a command with no API key from the
//! environment, and the JSON documents it writes.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

pub fn goodput() -> Command {
    let mut c = Command::cargo_bin("goodput").unwrap();
    c.env_remove("OPENAI_API_KEY");
    c
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}
