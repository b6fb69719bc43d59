//! JSON: the result document itself, pretty-printed; for a comparison, the
//! table and the verdicts.

use super::{ExportError, Exporter, Rendered};
use crate::compare::Comparison;
use goodput_core::doc::sweep::SweepResult;
use goodput_core::RunResult;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

fn pretty<T: Serialize>(v: &T) -> Result<Rendered, ExportError> {
    let mut bytes = serde_json::to_vec_pretty(v)?;
    bytes.push(b'\n');
    Ok(Rendered::File(bytes))
}

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn render_run(&self, run: &RunResult) -> Result<Rendered, ExportError> {
        pretty(run)
    }

    fn render_sweep(&self, sweep: &SweepResult) -> Result<Rendered, ExportError> {
        pretty(sweep)
    }

    fn render_compare(&self, c: &Comparison, _runs: &[&RunResult]) -> Result<Rendered, ExportError> {
        pretty(c)
    }
}
