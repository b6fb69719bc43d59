#!/usr/bin/env python3
"""Fill a validation file's TensorRT-LLM rows with the limits trtllm-bench
would have picked for them, to see how much the engine's defaults move the
errors (docs/simulator.md, "trtllm-bench's own limits").

    python3 scripts/trtllm-bench-limits.py IN.csv OUT.csv [MEMORY_FRACTION]

trtllm-bench's PyTorch path, when no batch or token limit is given
(`tensorrt_llm/bench/benchmark/utils/general.py` `get_settings`,
`bench/build/build.py` `get_benchmark_engine_settings`,
`bench/build/tuning.py` `calc_engine_setting` and `finetune_setting`):

- weights: every parameter at the checkpoint's bytes (NVFP4 0.5, FP8 1,
  else 2); a quantisation it has no figures for (MXFP4) takes the build
  defaults instead, a batch of 2,048 and 8,192 tokens;
- KV bytes a token: 2 x layers x max(TP, KV heads) x head size x (1 for an
  FP8 cache, else 2), every layer counted (no sliding window, no chunk);
- requests that fit: (GPU memory x GPUs - weights) x the memory fraction
  (trtllm-bench's `--kv_cache_free_gpu_mem_fraction`, 0.90 unless given)
  over the bytes of a whole prompt and answer;
- batch: that, at most 4,096, over the pipeline stages, rounded up (to 32
  under 256, 128 under 1,024, else 256; at least 64);
- tokens a step: the batch x (1 + prompt / answer), at most 32,768, rounded
  up (at least 2,048); chunked prefill is off unless the options file
  turns it on, so at least the longest prompt plus the batch.

The `--tp` trtllm-bench is given is the world size: a row's TP, or its EP
where attention is data-parallel. Latent attention (DeepSeek) is left at
the engine's defaults: how the heuristic sizes an MLA cache changed between
releases and the pages do not say which ran. Model figures are the
catalog's (crates/goodput-sim/src/engine/catalog/models.rs); GPU memory is
what the GPU reports, in GiB.
"""
import csv
import io
import math
import sys

# parameters (billions), layers, KV heads, head size
MODELS = {
    "llama-3.1-8b": (8.03, 32, 8, 128),
    "llama-3.3-70b": (70.6, 80, 8, 128),
    "llama-3.1-405b": (405.9, 126, 8, 128),
    "qwen3-30b-a3b": (30.5, 48, 4, 128),
    "qwen3-235b-a22b": (235.1, 94, 4, 128),
    "llama-4-scout-17b-16e": (108.6, 48, 8, 128),
    "llama-4-maverick-17b-128e": (401.6, 48, 8, 128),
    "llama-4-maverick": (401.6, 48, 8, 128),
    "gpt-oss-120b": (116.8, 36, 8, 64),
    "gpt-oss-20b": (20.9, 24, 8, 64),
}
# GiB a GPU reports
MEMORY = {"h100-sxm": 79.6, "h100": 79.6, "h200": 139.8, "b200": 178.4, "gb200": 184.0, "rtx-pro-6000": 95.6}
BYTES = {"fp8": 1.0, "fp4": 0.5, "bf16": 2.0}


def limits(r, fraction):
    if r["model"] not in MODELS or r["gpu"] not in MEMORY:
        return None
    params, layers, kv_heads, head = MODELS[r["model"]]
    tp, ep, pp = (int(r.get(k) or 1) for k in ("tp", "ep", "pp"))
    world = max(tp, ep)
    isl, osl = int(r["input_tokens"]), int(r["output_tokens"])
    if r["precision"] not in BYTES:
        return 2048, max(8192, isl + 2048)
    # The row's cache where it names one, else the checkpoint's: FP8 beside
    # FP8 and NVFP4 weights.
    kv = {"fp8": 1.0, "auto": 2.0}.get(r.get("kv_cache"), 1.0 if r["precision"] in ("fp8", "fp4") else 2.0)
    per_token = 2 * layers * max(world, kv_heads) * head * kv / 1024**3
    free = MEMORY[r["gpu"]] * world * pp - params * 1e9 * BYTES[r["precision"]] / 1024**3
    requests = free * fraction / (per_token * (isl + osl))
    raw_batch = min(requests, 4096) / pp
    raw_tokens = min(raw_batch * (1 + isl / osl), 32768)
    batch = round_up(raw_batch, [(256, 32), (1024, 128), (math.inf, 256)], 64)
    tokens = round_up(raw_tokens, [(4096, 256), (8192, 512), (math.inf, 1024)], 2048)
    return batch, max(tokens, isl + batch)


def round_up(x, ladder, least):
    """x rounded up to a multiple of the step of the first (bound, step)
    rung it lies under, and at least `least`: trtllm-bench's two ladders
    (every rung past the first is above `least` already)."""
    step = next(step for bound, step in ladder if x < bound)
    return max(least, step * math.ceil(x / step))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    fraction = float(sys.argv[3]) if len(sys.argv) > 3 else 0.90
    lines = open(src).read().splitlines()
    comments = [l for l in lines if l.startswith("#")]
    rows = list(csv.DictReader([l for l in lines if not l.startswith("#")]))
    fields = list(rows[0].keys())
    for f in ("max_num_seqs", "max_num_batched_tokens"):
        if f not in fields:
            fields.insert(fields.index("metric"), f)
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    filled = 0
    for r in rows:
        got = limits(r, fraction) if r["engine"] == "tensorrt-llm" and not r.get("max_num_seqs") else None
        if got:
            r["max_num_seqs"], r["max_num_batched_tokens"] = map(str, got)
            filled += 1
        w.writerow(r)
    open(dst, "w").write("\n".join(comments + [out.getvalue()]))
    print(f"{filled} of {len(rows)} rows given trtllm-bench's limits", file=sys.stderr)


if __name__ == "__main__":
    main()
