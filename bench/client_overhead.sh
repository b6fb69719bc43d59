#!/usr/bin/env bash
# The client's own cost and accuracy (issue: "a client that is provably not
# the bottleneck"): the fixed-timing server sends 1 token per chunk every
# 10 ms to STREAMS concurrent streams (100k tokens/s offered at 1,000), on
# this same machine; goodput bench loads it. Reports the client's CPU time
# per streamed token, |measured ITL − 10 ms|, and the achieved/offered rate.
# The server logs when it wrote each chunk (--write-log) and the client names
# each request (X-Request-Id), so each measured gap is also split into the
# server's share (its write gap against 10 ms) and the client's own (the
# measured gap against the write gap).
#   bench/client_overhead.sh [STREAMS] [REQUESTS] [OUTPUT_TOKENS]
# Environment: PIN=1 (server on CPU 0, client on CPU 1), TRANSPORT=auto|reqwest (the client's HTTP stack), STAMP=auto|read|kernel
# (when chunks are stamped), SERVER_THREADS and CLIENT_THREADS (tokio worker
# threads of each side; 1: a current-thread runtime; CLIENT_THREADS holds for
# the like-for-like runs of goodput and the baseline too), BENCH_ARGS (more `goodput bench` flags, e.g.
# "--rate 210" for streams at independent phases), STALLS=1 (runs
# stall_probe beside the run and splits the ITL errors by whether the machine
# stalled near them), SERVER_WRAP and CLIENT_WRAP (a command put before
# each side, e.g. "chrt -f 50"), CLIENT_BIN (another goodput binary as the
# client, e.g. an older build, against this build's server), BASELINE_BIN (a
# goodput binary to measure too, e.g. the last release: its CPU per token
# and goodput's ratio to it), FLOOR=0 (leaves out the floor client).
# The floor client (bench/floor.c: one epoll loop, one read and one clock
# reading per read, a byte scan for "data:") is built with cc and run against
# a fresh server of the same timing after goodput's run, in the same sitting;
# the last lines give goodput's CPU per token as a ratio to it. ROUNDS=N
# repeats those like-for-like runs N times in turn and gives the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${1:-1000}
REQUESTS=${2:-3000}
OUT_TOKENS=${3:-500}
PORT=${PORT:-18777}
cargo build --release -q --bin goodput --example itl_error --example stall_probe
if [ "${FLOOR:-1}" != 0 ]; then mkdir -p target/bench && cc -O2 -o target/bench/floor bench/floor.c; fi
BIN=${BIN:-target/release/goodput}
CLIENT_BIN=${CLIENT_BIN:-$BIN}
TMP=$(mktemp -d)
# PIN=1 puts the server on CPU 0 and the client on CPU 1.
SERVER_CPU=() CLIENT_CPU=()
if [ -n "${PIN:-}" ]; then SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1); fi
env ${SERVER_THREADS:+GOODPUT_THREADS=$SERVER_THREADS} "${SERVER_CPU[@]}" ${SERVER_WRAP:-} $BIN serve --profile fixed -q --port "$PORT" --ttft 10ms --itl 10ms --tokens-per-chunk 1 \
  --write-log "$TMP/writes.jsonl" 2>"$TMP/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 0.5
read -r s_user0 s_sys0 < <(awk '{print $14, $15}' /proc/$SERVER/stat)
if [ -n "${STALLS:-}" ]; then target/release/examples/stall_probe 3600 "$TMP/stalls.csv" & PROBE=$!; fi
env ${CLIENT_THREADS:+GOODPUT_THREADS=$CLIENT_THREADS} "${CLIENT_CPU[@]}" ${CLIENT_WRAP:-} /usr/bin/time -f "%U %S %e" -o "$TMP/time" $CLIENT_BIN bench --url "http://127.0.0.1:$PORT" -c "$STREAMS" -n "$REQUESTS" \
  --output-tokens "$OUT_TOKENS" --input-tokens 32 ${BENCH_ARGS:-} --no-metrics -q --transport "${TRANSPORT:-auto}" --stamp "${STAMP:-auto}" -o "$TMP/run.json" --records "$TMP/rec.jsonl" \
  --header 'X-Request-Id: {request}' >/dev/null
read -r s_user1 s_sys1 < <(awk '{print $14, $15}' /proc/$SERVER/stat)
STALL_ARGS=()
if [ -n "${STALLS:-}" ]; then kill -TERM $PROBE; wait $PROBE; STALL_ARGS=("$TMP/run.json" "$TMP/stalls.csv"); fi
read -r user sys wall < "$TMP/time"
TICK=$(getconf CLK_TCK)
tokens=$(python3 -c "import json;print(json.load(open('$TMP/run.json'))['summary']['tokens']['output_all'])")
# The client's own lateness on the receiving side, as the run reports it.
python3 - "$TMP/run.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc["summary"]
lag = s.get("client_read_lag_ms", {})
c = doc.get("client")
print(f"stamps: {doc['config']['client']['stamp']} · output {s['throughput']['output_tokens_per_s']:.0f} tok/s over the window · "
      f"TTFT p50 {s['ttft_ms']['p50']:.2f} ms p99 {s['ttft_ms']['p99']:.2f} ms (10 ms true)")
if c:
    print(f"the run's own client CPU figure: {c['cpu_s']:.2f} s over {c['wall_s']:.2f} s = {c['cpu_us_per_output_token']:.2f} µs per output token "
          f"(from the first send; the process's start and the scrapes before it are outside)")
if lag.get("count"):
    print(f"client read lag per request (longest wait of a chunk in the socket): p50 {lag['p50']:.3f} ms · "
          f"p99 {lag['p99']:.3f} ms · max {lag['max']:.3f} ms; shared reads {s.get('shared_read_chunks', 0)}")
PY
echo "streams $STREAMS · requests $REQUESTS · $OUT_TOKENS tokens each · wall ${wall}s"
python3 - "$user" "$sys" "$tokens" "$s_user0" "$s_sys0" "$s_user1" "$s_sys1" "$TICK" "$wall" <<'PY'
import sys
user, sys_, tokens, su0, ss0, su1, ss1, tick, wall = sys.argv[1:]
cpu = float(user) + float(sys_)
server = (int(su1) - int(su0) + int(ss1) - int(ss0)) / int(tick)
print(f"client CPU {cpu:.2f} s ({float(user):.2f} user + {float(sys_):.2f} sys) = {cpu / int(tokens) * 1e6:.2f} µs per streamed token; "
      f"{cpu / float(wall):.2f} cores")
print(f"server CPU {server:.2f} s = {server / float(wall):.2f} cores")
PY
target/release/examples/itl_error "$TMP/rec.jsonl" 10ms "${STALL_ARGS[@]}" --writes "$TMP/writes.jsonl"
# The server's own precision: how late its chunks left against their exact
# time, and how far the gaps between a stream's writes strayed from 10 ms
# (the server's share of any ITL error the client measures), from /metrics.
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics.prom"
for m in lateness gap_error; do
  awk -v m="$m" '$0 ~ "chunk_" m "_seconds_bucket" { split($1, a, "\""); le[n] = a[2]; c[n++] = $2 }
    END { printf "server chunk %s within:", m; for (i = 0; i < n; i++) if (le[i] == "0.000512" || le[i] == "0.001024" || le[i] == "0.004096" || le[i] == "0.008192") printf " %s ms %.2f%%", le[i] * 1000, 100 * c[i] / c[n-1]; printf "\n" }' "$TMP/metrics.prom"
done

# The same load from the floor client, and from a baseline build when one is
# given, each against a fresh server of the same timing (no write log).
cpu_per_token() { # TIME_FILE TOKENS
  read -r u s _ < "$1"
  python3 -c "print(f'{($u + $s) / $2 * 1e6:.2f}')"
}
against() { # NAME COMMAND...: prints NAME's CPU per token; sets $us
  local name=$1; shift
  env ${SERVER_THREADS:+GOODPUT_THREADS=$SERVER_THREADS} "${SERVER_CPU[@]}" ${SERVER_WRAP:-} $BIN serve --profile fixed -q --port "$((PORT + 1))" --ttft 10ms --itl 10ms \
    --tokens-per-chunk 1 2>"$TMP/serve2.log" &
  local server2=$!
  sleep 0.5
  env ${CLIENT_THREADS:+GOODPUT_THREADS=$CLIENT_THREADS} "${CLIENT_CPU[@]}" ${CLIENT_WRAP:-} /usr/bin/time -f "%U %S %e" -o "$TMP/time2" "$@" >"$TMP/out2" \
    || { kill $server2; cat "$TMP/out2"; return 1; }
  # The server's chunks that left within 1 ms of their time beside this client.
  curl -s "http://127.0.0.1:$((PORT + 1))/metrics" >"$TMP/metrics2.prom"
  kill $server2; wait $server2 2>/dev/null || true
  on_time=$(awk '$0 ~ "chunk_lateness_seconds_bucket" { split($1, a, "\""); if (a[2] == "0.001024") w = $2; n = $2 } END { if (n) printf "%.2f", 100 * w / n; else printf "?" }' "$TMP/metrics2.prom")
  us=$(cpu_per_token "$TMP/time2" "$((REQUESTS * OUT_TOKENS))")
  echo "$name: $us µs of CPU per streamed token ($(awk '{print $1 " user + " $2 " sys, " $3 " s wall"}' "$TMP/time2")); the server's chunks on time (within 1 ms) beside it: $on_time%"
}
# Like for like: goodput again (no records file, no write log, no request
# ids), then the floor and the baseline, each on a fresh server; the ratios
# are to this run of goodput's.
bench_args() { echo bench --url "http://127.0.0.1:$((PORT + 1))" -c "$STREAMS" -n "$REQUESTS" --output-tokens "$OUT_TOKENS" \
  --input-tokens 32 ${BENCH_ARGS:-} --no-metrics -q --transport "${TRANSPORT:-auto}" --stamp "${STAMP:-auto}"; }
# ROUNDS (default 1) repeats the like-for-like runs in turn (goodput, floor,
# baseline, goodput, ...): on a shared machine one run of each can differ by
# half from the next, so with ROUNDS above 1 the last lines give the medians
# and the median of each round's ratio.
ratios_floor=() ratios_base=() all_goodput=() all_floor=() all_base=()
for round in $(seq "${ROUNDS:-1}"); do
  [ "${ROUNDS:-1}" -gt 1 ] && echo "round $round"
  # shellcheck disable=SC2046
  against goodput $CLIENT_BIN $(bench_args)
  goodput_us=$us
  all_goodput+=("$us")
  if [ "${FLOOR:-1}" != 0 ]; then
    against floor target/bench/floor 127.0.0.1 "$((PORT + 1))" "$STREAMS" "$REQUESTS" "$OUT_TOKENS"
    all_floor+=("$us")
    ratios_floor+=("$(python3 -c "print(f'{$goodput_us / $us:.4f}')")")
    python3 -c "print(f'goodput / floor: {$goodput_us / $us:.2f}x')"
  fi
  if [ -n "${BASELINE_BIN:-}" ]; then
    # shellcheck disable=SC2046
    against baseline "$BASELINE_BIN" $(bench_args)
    all_base+=("$us")
    ratios_base+=("$(python3 -c "print(f'{$goodput_us / $us:.4f}')")")
    python3 -c "print(f'goodput / baseline: {$goodput_us / $us:.2f}x')"
  fi
done
if [ "${ROUNDS:-1}" -gt 1 ]; then
  python3 - "${all_goodput[*]}" "${all_floor[*]:-}" "${all_base[*]:-}" "${ratios_floor[*]:-}" "${ratios_base[*]:-}" <<'PY'
import statistics, sys
def vals(s):
    return [float(v) for v in s.split()]
g, f, b, rf, rb = (vals(a) for a in sys.argv[1:6])
print(f"medians over {len(g)} rounds: goodput {statistics.median(g):.2f} µs a token (range {min(g):.2f}-{max(g):.2f})"
      + (f" · floor {statistics.median(f):.2f} ({min(f):.2f}-{max(f):.2f})" if f else "")
      + (f" · baseline {statistics.median(b):.2f} ({min(b):.2f}-{max(b):.2f})" if b else ""))
if rf:
    print(f"goodput / floor, median of the rounds: {statistics.median(rf):.2f}x (range {min(rf):.2f}-{max(rf):.2f})")
if rb:
    print(f"goodput / baseline, median of the rounds: {statistics.median(rb):.2f}x (range {min(rb):.2f}-{max(rb):.2f})")
PY
fi
