#!/usr/bin/env bash
# Merging shards at scale: writes SHARDS shards of N synthetic records each
# through the real records writer (the records_scale example, as
# bench/records_scale.sh writes one run), then times `goodput merge` of
# them into one result and records file, RUNS times, and prints the median
# wall time, CPU time (user + system) and peak resident memory
# (/usr/bin/time -v) of the runs.
#   bench/merge_scale.sh [N] [SHARDS] [RUNS] [EXT]
# N defaults to 150000 (a shard), SHARDS to 2, RUNS to 5, EXT (the records
# files' format, by their extension) to jsonl. BIN names another goodput
# binary (e.g. an older build) to time instead; KEEP=DIR writes the shards
# to DIR and leaves them there. Run it when the machine is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-150000}
SHARDS=${2:-2}
RUNS=${3:-5}
EXT=${4:-jsonl}
# shellcheck source=bench/timed_runs.sh
. bench/timed_runs.sh
records_setup
results=()
for s in $(seq 0 $((SHARDS - 1))); do
  target/release/examples/records_scale "$N" "$TMP" "s$s.$EXT" "$s/$SHARDS"
  results+=("$TMP/s$s.json")
done
timed_runs "$RUNS" "$TMP" "$BIN" merge "${results[@]}" -o "$TMP/merged.json" --records "$TMP/merged.$EXT" --quiet
medians "$TMP" "$SHARDS shards of $N records"
