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
cargo build --release -q --bin goodput -p goodput --example records_scale -p goodput-report
BIN=${BIN:-target/release/goodput}
TMP=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT
target/release/examples/records_scale "$N" "$TMP" "run.$EXT"
for i in $(seq "$RUNS"); do
  /usr/bin/time -v -o "$TMP/time.$i" "$BIN" report "$TMP/run.json" --records "$TMP/run.$EXT" ${REPORT_ARGS:-} >/dev/null
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s}' "$TMP/time.$i")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$TMP/time.$i")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$TMP/time.$i")
  echo "run $i: ${wall} s, ${cpu} s of CPU, ${rss} MB resident"
  echo "$wall $rss $cpu" >>"$TMP/all"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median of $RUNS: $(cut -d' ' -f1 "$TMP/all" | median) s, $(cut -d' ' -f3 "$TMP/all" | median) s of CPU, $(cut -d' ' -f2 "$TMP/all" | median) MB resident, $N records"
