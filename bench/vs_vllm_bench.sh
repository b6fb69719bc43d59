#!/usr/bin/env bash
# goodput beside vLLM's Rust benchmark client, `vllm-bench` (the vllm
# repository's rust/ workspace, crate rust/src/bench), in one sitting: both
# load the same fixed-timing server on this machine, which answers every
# request after exactly 10 ms and then sends 1 token per chunk every 10 ms
# (true TTFT 10 ms, true ITL 10 ms). For each STREAMS value the two clients
# run RUNS times each, alternating (goodput, vllm-bench, goodput, ...), each
# against a fresh server. Per run: the client's CPU seconds (user + sys of its
# whole process, start-up included, from /usr/bin/time) per streamed token,
# and its own mean TTFT and mean ITL. Tokens are counted the same way for
# both: from the server's write log (one line per stream that carried an
# X-Request-Id, one write per token), so warm-up or probe requests that
# stream nothing are not counted and every streamed token is.
# Then, per STREAMS: each client's median, and vllm-bench / goodput.
# The TTFT and ITL are each client's own. vllm-bench stamps the first token at
# the first event whose `choices` is not empty, which on this server (as on
# vLLM) is the role chunk in chat and the empty-text chunk in completions,
# sent as soon as the request arrives; and every later such event adds an ITL
# gap, the empty-content chunk and the final finish_reason chunk included
# (gaps near 0 ms), so its mean ITL is under 10 ms and its TTFT well under.
# goodput counts from the first content token. vllm-bench names each request
# in an x-request-id header itself; goodput is given one, so the server logs
# both clients' streams.
#   VLLM_BENCH_BIN=PATH bench/vs_vllm_bench.sh [STREAMS...]
# STREAMS default "300 1000"; environment: RUNS (default 3), REQUESTS (per
# run; default 3 × STREAMS), OUT_TOKENS (default 100), API=chat|completions
# (default chat: goodput's --api and vllm-bench's --backend openai-chat or
# openai), GOODPUT_BIN (default target/release/goodput; nothing is rebuilt),
# PORT (default 18779), KEEP=DIR keeps every run's files.
# vllm-bench is not built here. Build it from a checkout of the vllm
# repository: `cd rust && cargo build --release -p vllm-bench`, then
# VLLM_BENCH_BIN=.../rust/target/release/vllm-bench (or from the archived
# stand-alone repository vllm-project/vllm-bench: `cargo build --release`). It runs offline with a
# tokenizer built into it (`--tokenizer gpt2`, tiktoken's r50k encoding).
# Measure on a quiet machine: the two clients share the CPUs with the server.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VLLM_BENCH_BIN:-}" ]; then
  echo "set VLLM_BENCH_BIN to a vllm-bench binary: in a checkout of the vllm repository," >&2
  echo "  cd rust && cargo build --release -p vllm-bench   # then VLLM_BENCH_BIN=\$PWD/target/release/vllm-bench" >&2
  exit 2
fi
V=$(realpath "$VLLM_BENCH_BIN")
G=$(realpath "${GOODPUT_BIN:-target/release/goodput}")
[ -x "$V" ] || { echo "VLLM_BENCH_BIN=$VLLM_BENCH_BIN is not an executable file" >&2; exit 2; }
[ -x "$G" ] || { echo "no goodput binary at $G: cargo build --release --bin goodput, or set GOODPUT_BIN" >&2; exit 2; }
STREAMS_LIST=${*:-300 1000}
RUNS=${RUNS:-3}
OUT_TOKENS=${OUT_TOKENS:-100}
API=${API:-chat}
PORT=${PORT:-18779}
URL=http://127.0.0.1:$PORT
case $API in
  chat) VBACKEND=openai-chat ;;
  completions) VBACKEND=openai ;;
  *) echo "API=$API: use chat or completions" >&2; exit 2 ;;
esac

SERVER=
if [ -n "${KEEP:-}" ]; then
  TMP=$(mkdir -p "$KEEP" && cd "$KEEP" && pwd)
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null' EXIT
else
  TMP=$(mktemp -d)
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
fi

# run CLIENT STREAMS REQUESTS DIR: one run against a fresh server; leaves
# DIR/{time,out,err,writes.jsonl}.
run() {
  local client=$1 c=$2 n=$3 dir=$4
  mkdir -p "$dir"
  "$G" serve --profile fixed -q --port "$PORT" --ttft 10ms --itl 10ms --tokens-per-chunk 1 \
    --write-log "$dir/writes.jsonl" 2>"$dir/serve.log" &
  SERVER=$!
  for _ in $(seq 50); do curl -fs "$URL/v1/models" >/dev/null && break; sleep 0.1; done
  local cmd
  case $client in
    goodput) cmd=("$G" bench --url "$URL" --api "$API" -c "$c" -n "$n" --input-tokens 32 --output-tokens "$OUT_TOKENS"
      --no-metrics -q -o "$dir/result.json" --header 'X-Request-Id: {request}') ;;
    vllm-bench) cmd=("$V" --backend "$VBACKEND" --base-url "$URL" --model goodput-fixed --tokenizer gpt2
      --dataset-name random --random-input-len 32 --random-output-len "$OUT_TOKENS" --ignore-eos
      --num-prompts "$n" --max-concurrency "$c" --request-rate inf --disable-tqdm
      --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99) ;;
  esac
  /usr/bin/time -f "%U %S %e" -o "$dir/time" "${cmd[@]}" >"$dir/out" 2>"$dir/err" ||
    { echo "$client failed; the end of its output:" >&2; tail -20 "$dir/out" "$dir/err" >&2; exit 1; }
  kill $SERVER && wait $SERVER 2>/dev/null || true
  SERVER=
}

for c in $STREAMS_LIST; do
  n=${REQUESTS:-$((3 * c))}
  for r in $(seq "$RUNS"); do
    for client in goodput vllm-bench; do
      echo "$client: $c streams × $n requests × $OUT_TOKENS tokens, run $r of $RUNS" >&2
      run "$client" "$c" "$n" "$TMP/$c/$client-$r"
    done
  done
done

python3 - "$TMP" "$RUNS" "$OUT_TOKENS" "$API" $STREAMS_LIST <<'PY'
import json, re, statistics, sys
tmp, runs, k, api = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
streams_list = [int(s) for s in sys.argv[5:]]

def figures(d, client):
    user, sys_, wall = (float(x) for x in open(f"{d}/time").read().split()[-3:])
    # Streamed tokens from the server's write log: one write per token.
    tokens = sum(len(json.loads(line)["writes_ns"]) for line in open(f"{d}/writes.jsonl") if line.strip())
    if client == "goodput":
        s = json.load(open(f"{d}/result.json"))["summary"]
        ttft, itl, done = s["ttft_ms"]["mean"], s["itl_ms"]["mean"], s["requests"]["completed"]
    else:
        out = open(f"{d}/out").read()
        get = lambda label: float(re.search(rf"^{re.escape(label)}\s+(\S+)", out, re.M).group(1))
        ttft, itl, done = get("Mean TTFT (ms):"), get("Mean ITL (ms):"), int(get("Successful requests:"))
    cpu = user + sys_
    return {"cpu": cpu, "user": user, "sys": sys_, "wall": wall, "tokens": tokens,
            "us": cpu / tokens * 1e6 if tokens else float("nan"), "ttft": ttft, "itl": itl, "done": done}

print(f"\nAPI {api}; {k} tokens a request, 1 a chunk every 10 ms after a 10 ms TTFT (true TTFT 10 ms, true ITL 10 ms).")
print("CPU is user + sys of the client's whole process (start-up included); tokens are the server's token writes.")
for c in streams_list:
    rows = {cl: [figures(f"{tmp}/{c}/{cl}-{r}", cl) for r in range(1, runs + 1)] for cl in ("goodput", "vllm-bench")}
    print(f"\n{c} streams ({c * 100:,} tokens/s offered while all streams run)")
    print("| client | run | µs CPU per token | CPU s (user + sys) | wall s | tokens streamed | completed | mean TTFT ms | mean ITL ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in range(runs):
        for cl in ("goodput", "vllm-bench"):
            f = rows[cl][r]
            print(f"| {cl} | {r + 1} | {f['us']:.2f} | {f['cpu']:.2f} ({f['user']:.2f} + {f['sys']:.2f}) | {f['wall']:.2f} | "
                  f"{f['tokens']} | {f['done']} | {f['ttft']:.2f} | {f['itl']:.3f} |")
    med = {cl: statistics.median(f["us"] for f in rows[cl]) for cl in rows}
    for cl in rows:
        ttft = statistics.median(f["ttft"] for f in rows[cl])
        itl = statistics.median(f["itl"] for f in rows[cl])
        print(f"{cl}: median {med[cl]:.2f} µs CPU per token; median of mean TTFT {ttft:.2f} ms "
              f"({ttft - 10:+.2f} against the true 10), of mean ITL {itl:.3f} ms ({itl - 10:+.3f} against the true 10)")
    print(f"vllm-bench / goodput CPU per token (medians): {med['vllm-bench'] / med['goodput']:.2f}x")
PY
