#!/usr/bin/env bash
# Records at scale (issue 21, part 5): writes N synthetic records of 64
# one-token chunks through the real records writer (the records_scale
# example), then times `goodput report run.json --records FILE` re-analysing
# them, RUNS times, and prints the records file's bytes a record and the
# median wall time, CPU time (user + system) and peak resident memory
# (/usr/bin/time -v) of the runs. Where other work competes for the cores,
# the CPU time is the steadier figure.
#   bench/records_scale.sh [N] [RUNS] [EXT]
# N defaults to 300000, RUNS to 5, EXT (the records file's format, by its
# extension) to jsonl. BIN names another goodput binary (e.g. an older
# build) to time instead; REPORT_ARGS adds flags to `report`; KEEP=DIR
# writes the run to DIR and leaves it there. Other work on
# the machine competes for its cores: run it when the machine is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}
RUNS=${2:-5}
EXT=${3:-jsonl}
# shellcheck source=bench/timed_runs.sh
. bench/timed_runs.sh
records_setup
target/release/examples/records_scale "$N" "$TMP" "run.$EXT"
# shellcheck disable=SC2086 # REPORT_ARGS is split into flags on purpose
timed_runs "$RUNS" "$TMP" "$BIN" report "$TMP/run.json" --records "$TMP/run.$EXT" ${REPORT_ARGS:-}
medians "$TMP" "$N records"
