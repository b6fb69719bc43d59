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
cargo build --release -q --bin goodput -p goodput --example records_scale -p goodput-report
BIN=${BIN:-target/release/goodput}
TMP=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT
results=()
for s in $(seq 0 $((SHARDS - 1))); do
  target/release/examples/records_scale "$N" "$TMP" "s$s.$EXT" "$s/$SHARDS"
  results+=("$TMP/s$s.json")
done
for i in $(seq "$RUNS"); do
  /usr/bin/time -v -o "$TMP/time.$i" "$BIN" merge "${results[@]}" -o "$TMP/merged.json" --records "$TMP/merged.$EXT" --quiet >/dev/null
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s}' "$TMP/time.$i")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$TMP/time.$i")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$TMP/time.$i")
  echo "run $i: ${wall} s, ${cpu} s of CPU, ${rss} MB resident"
  echo "$wall $rss $cpu" >>"$TMP/all"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median of $RUNS: $(cut -d' ' -f1 "$TMP/all" | median) s, $(cut -d' ' -f3 "$TMP/all" | median) s of CPU, $(cut -d' ' -f2 "$TMP/all" | median) MB resident, $SHARDS shards of $N records"
