#!/usr/bin/env bash
# goodput beside the Python clients people use today (vLLM's `bench serve`,
# NVIDIA's AIPerf and GuideLLM), each loading the same fixed-timing server on this machine: the
# server answers every request after exactly 10 ms and then sends 1 token per
# chunk every 10 ms, so the true TTFT is 10 ms and the true ITL 10 ms. Any
# excess a client reports is its own, or the server's while the client took
# the CPU from it (the last column: the server's chunks that left on time,
# from its own /metrics). Per client: its own TTFT and ITL
# figures, its output rate against the offered rate, and its CPU time per
# streamed token from 1% to 90% of the run's chunks (its process tree,
# sampled every 100 ms beside the server's chunk count), so start-up,
# warm-up probes and the end of the run are not counted.
# ITL is each tool's own: goodput's, vLLM's and AIPerf's inter_chunk_latency
# pool every gap; GuideLLM's inter_token_latency is one mean gap per request.
#   bench/vs_python_clients.sh [STREAMS] [REQUESTS] [OUTPUT_TOKENS]
# The Python tools are installed from PyPI into venvs under $PY (default
# target/pyclients) on first use (vLLM brings torch and CUDA libraries:
# several GB); they get a tokenizer (our tiny test one) from a local Hugging
# Face cache there, offline. CLIENTS picks which run (default
# "goodput vllm aiperf guidellm"); BIN or GOODPUT_BIN an already built
# goodput (nothing is rebuilt); KEEP=DIR keeps the results.
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${1:-100}
REQUESTS=${2:-$((3 * STREAMS))}
OUT_TOKENS=${3:-100}
PORT=${PORT:-18778}
PY=$(mkdir -p "${PY:-target/pyclients}" && cd "${PY:-target/pyclients}" && pwd)
CLIENTS=${CLIENTS:-goodput vllm aiperf guidellm}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
AIPERF_VERSION=${AIPERF_VERSION:-0.13.0}
GUIDELLM_VERSION=${GUIDELLM_VERSION:-0.8.1}
# BIN (or GOODPUT_BIN): an already built goodput to measure (nothing is
# rebuilt), so a side-by-side run pins what it measures; by default this
# tree's release build.
BIN=${BIN:-${GOODPUT_BIN:-}}
if [ -n "${BIN:-}" ]; then
  G=$(realpath "$BIN")
else
  cargo build --release -q --bin goodput
  G=$PWD/target/release/goodput
fi
URL=http://127.0.0.1:$PORT

for tool in vllm aiperf guidellm; do
  case " $CLIENTS " in *" $tool "*) ;; *) continue ;; esac
  version_var=${tool^^}_VERSION
  if [ ! -x "$PY/$tool/bin/$tool" ]; then
    echo "installing $tool ${!version_var} into $PY/$tool"
    python3 -m venv "$PY/$tool"
    "$PY/$tool/bin/pip" install -q "$tool==${!version_var}"
  fi
done
# A local Hugging Face cache holding our tiny test tokenizer, so neither
# tool reaches for the hub (AIPerf takes its name, vLLM and GuideLLM its folder).
SNAP=$PY/hf/hub/models--goodput--tiny-bpe/snapshots/0000000000000000000000000000000000000000
mkdir -p "$SNAP" "$PY/hf/hub/models--goodput--tiny-bpe/refs"
printf 0000000000000000000000000000000000000000 >"$PY/hf/hub/models--goodput--tiny-bpe/refs/main"
cp crates/goodput-load/tests/fixtures/tiny-bpe-tokenizer.json "$SNAP/tokenizer.json"
echo '{"tokenizer_class":"PreTrainedTokenizerFast","model_max_length":100000}' >"$SNAP/tokenizer_config.json"
export HF_HOME=$PY/hf HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# KEEP=DIR keeps every client's results, logs and the server's /metrics
# there (one folder per client); by default they go with the run.
SERVER=
if [ -n "${KEEP:-}" ]; then
  TMP=$(mkdir -p "$KEEP" && cd "$KEEP" && pwd)
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null' EXIT
else
  TMP=$(mktemp -d)
  trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
fi

# client NAME STREAMS REQUESTS TOKENS: one run against a fresh server;
# leaves $TMP/NAME/{time,log,metrics.prom} and the tool's own result.
client() {
  local name=$1 c=$2 n=$3 k=$4 dir=$TMP/$1
  rm -rf "$dir" && mkdir -p "$dir"
  "$G" serve --profile fixed -q --port "$PORT" --ttft 10ms --itl 10ms --tokens-per-chunk 1 2>"$dir/serve.log" &
  SERVER=$!
  for _ in $(seq 50); do curl -fs "$URL/v1/models" >/dev/null && break; sleep 0.1; done
  local cmd
  case $name in
    goodput*) cmd=("$G" bench --url "$URL" -c "$c" -n "$n" --input-tokens 32 --output-tokens "$k" --no-metrics -q
      -o "$dir/result.json") ;;
    vllm*) cmd=("$PY/vllm/bin/vllm" bench serve --backend openai-chat --base-url "$URL" --endpoint /v1/chat/completions
      --model goodput-fixed --tokenizer "$SNAP" --dataset-name random --random-input-len 32 --random-output-len "$k"
      --num-prompts "$n" --max-concurrency "$c" --request-rate inf --ignore-eos --save-result --result-dir "$dir"
      --result-filename result.json --percentile-metrics ttft,tpot,itl --metric-percentiles 50,99) ;;
    aiperf*) cmd=("$PY/aiperf/bin/aiperf" profile -m goodput-fixed --url "$URL" --endpoint-type chat --streaming
      --tokenizer goodput/tiny-bpe --use-server-token-count --concurrency "$c" --request-count "$n"
      --prompt-input-tokens-mean 32 --prompt-input-tokens-stddev 0 --prompt-output-tokens-mean "$k"
      --prompt-output-tokens-stddev 0 --extra-inputs ignore_eos:true --no-server-metrics --no-gpu-telemetry
      --ui none --output-artifact-dir "$dir/out") ;;
    guidellm*) cmd=("$PY/guidellm/bin/guidellm" run --backend "kind=openai_http,target=$URL,model=goodput-fixed"
      --profile "kind=concurrent,streams=$c" --constraint "kind=max_requests,count=$n"
      --data "kind=synthetic_text,prompt_tokens=32,output_tokens=$k"
      --tokenizer "kind=hf_auto,model=$SNAP" --output kind=json --disable-console-interactive) ;;
  esac
  (cd "$dir" && exec /usr/bin/time -f "%U %S %e" -o "$dir/time" "${cmd[@]}" >"$dir/log" 2>&1) &
  local run=$!
  python3 - "$run" "$URL/metrics" >"$dir/samples" <<'SAMPLER' &
# Every 100 ms: seconds, the server's chunks so far, and the CPU seconds of
# the client's whole process tree (live processes, plus children reaped).
import os, sys, time, urllib.request
root, url = int(sys.argv[1]), sys.argv[2]
tick = os.sysconf("SC_CLK_TCK")
def tree_cpu():
    kids, cpu = {}, {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(f[1]), []).append(int(p))
        cpu[int(p)] = sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    todo, total = [root], 0
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0)
        todo += kids.get(p, [])
    return total / tick
def chunks():
    for line in urllib.request.urlopen(url, timeout=1).read().decode().splitlines():
        if line.startswith("goodput_sim_chunk_lateness_seconds_count"):
            return int(float(line.split()[1]))
t0 = time.monotonic()
while os.path.exists(f"/proc/{root}"):
    try:
        print(f"{time.monotonic() - t0:.2f} {chunks()} {tree_cpu():.2f}", flush=True)
    except Exception:
        pass
    time.sleep(0.1)
SAMPLER
  local sampler=$!
  wait $run || { echo "$name failed; the end of its output:" >&2; tail -20 "$dir/log" >&2; exit 1; }
  wait $sampler
  curl -fs "$URL/metrics" >"$dir/metrics.prom"
  kill $SERVER && wait $SERVER 2>/dev/null || true
  SERVER=
}

for tool in $CLIENTS; do
  echo "$tool: $STREAMS streams × $REQUESTS requests × $OUT_TOKENS tokens"
  client "$tool" "$STREAMS" "$REQUESTS" "$OUT_TOKENS"
done

python3 - "$TMP" "$STREAMS" "$REQUESTS" "$OUT_TOKENS" $CLIENTS <<'PY'
import json, sys, os, re
tmp, streams, requests, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tools = sys.argv[5:]

def wall(name):
    return float(open(f"{tmp}/{name}/time").read().split()[-1])

def cpu_per_token(name):
    # CPU seconds per chunk (1 token each) between the samples where 1% and
    # 90% of the run's chunks had gone out. The tree's CPU is taken as its
    # running maximum: a client that has exited but is not yet reaped is in
    # no process's count for a moment.
    rows, top = [], 0.0
    for line in open(f"{tmp}/{name}/samples"):
        f = line.split()
        if len(f) == 3:
            top = max(top, float(f[2]))
            rows.append((float(f[1]), top))
    total = rows[-1][0]
    a = next(r for r in rows if r[0] >= 0.01 * total)
    b = next(r for r in rows if r[0] >= 0.90 * total)
    return (b[1] - a[1]) / (b[0] - a[0]) if b[0] > a[0] else float("nan")

def server_within_1ms(name):
    # The server's own share: chunks that left more than 1 ms late.
    b = {}
    for line in open(f"{tmp}/{name}/metrics.prom"):
        m = re.match(r'goodput_sim_chunk_lateness_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if m:
            b[m.group(1)] = float(m.group(2))
    return 100 * b["0.001024"] / b["+Inf"] if b.get("+Inf") else float("nan")

def figures(tool):
    d = f"{tmp}/{tool}"
    if tool == "goodput":
        s = json.load(open(f"{d}/result.json"))["summary"]
        return (s["ttft_ms"]["p50"], s["ttft_ms"]["p99"], s["itl_ms"]["p50"], s["itl_ms"]["p99"],
                s["throughput"]["output_tokens_per_s"], s["requests"]["completed"])
    if tool == "vllm":
        j = json.load(open(f"{d}/result.json"))
        return (j["p50_ttft_ms"], j["p99_ttft_ms"], j["p50_itl_ms"], j["p99_itl_ms"],
                j["output_throughput"], j["completed"])
    if tool == "aiperf":
        j = json.load(open(f"{d}/out/profile_export_aiperf.json"))
        # AIPerf's inter_token_latency is one figure per request (its mean
        # gap); inter_chunk_latency pools every gap, as goodput's ITL does.
        return (j["time_to_first_token"]["p50"], j["time_to_first_token"]["p99"],
                j["inter_chunk_latency"]["p50"], j["inter_chunk_latency"]["p99"],
                j["output_token_throughput"]["avg"], j["request_count"]["avg"])
    if tool == "guidellm":
        b = json.load(open(f"{d}/benchmarks.json"))["benchmarks"][0]["metrics"]
        p = lambda m, q: b[m]["successful"]["percentiles"][q]
        return (p("time_to_first_token_ms", "p50"), p("time_to_first_token_ms", "p99"),
                p("inter_token_latency_ms", "p50"), p("inter_token_latency_ms", "p99"),
                b["output_tokens_per_second"]["successful"]["mean"],
                b["request_totals"]["successful"])

offered = streams * 100.0
print(f"\n{streams} streams × {requests} requests × {k} tokens; the server's true TTFT and ITL are 10 ms; "
      f"{offered:,.0f} tokens/s offered while all streams run")
print("| client | wall s (start-up included) | µs CPU per token | output tok/s (its own) | TTFT p50 / p99 ms (its own) | ITL p50 / p99 ms (its own) | completed | server chunks ≤ 1 ms late |")
print("|---|---|---|---|---|---|---|---|")
for tool in tools:
    t50, t99, i50, i99, tps, done = figures(tool)
    print(f"| {tool} | {wall(tool):.2f} | {cpu_per_token(tool) * 1e6:.1f} | {tps:,.0f} | {t50:.1f} / {t99:.1f} | "
          f"{i50:.2f} / {i99:.2f} | {int(done)} | {server_within_1ms(tool):.1f}% |")
PY
