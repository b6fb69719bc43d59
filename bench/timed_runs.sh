# Sourced by the benchmarks of a whole command (records_scale.sh,
# merge_scale.sh): `timed_runs RUNS DIR COMMAND...` runs COMMAND (its
# standard output dropped) RUNS times under /usr/bin/time -v, prints each
# run's wall time, CPU time (user + system) and peak resident memory, and
# keeps them in DIR/all; `medians DIR WHAT` prints their medians, WHAT after.
# `records_setup` builds the binary and the records_scale example, and sets
# BIN (the goodput binary timed, unless given) and TMP (KEEP, or a folder
# removed on exit).
records_setup() {
  cargo build --release -q --bin goodput -p goodput --example records_scale -p goodput-report
  BIN=${BIN:-target/release/goodput}
  TMP=${KEEP:-$(mktemp -d)}
  [ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT
}

timed_runs() {
  local runs=$1 dir=$2
  shift 2
  for i in $(seq "$runs"); do
    /usr/bin/time -v -o "$dir/time.$i" "$@" >/dev/null
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s}' "$dir/time.$i")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$dir/time.$i")
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$dir/time.$i")
    echo "run $i: ${wall} s, ${cpu} s of CPU, ${rss} MB resident"
    echo "$wall $rss $cpu" >>"$dir/all"
  done
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

medians() {
  local all=$1/all
  echo "median of $(wc -l <"$all"): $(cut -d' ' -f1 "$all" | median) s, $(cut -d' ' -f3 "$all" | median) s of CPU, $(cut -d' ' -f2 "$all" | median) MB resident, $2"
}
