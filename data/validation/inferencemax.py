#!/usr/bin/env python3
"""Writes inferencemax-{cdna3,hopper,blackwell,cdna4,trtllm,gptoss,dsr1}.csv
from InferenceMAX's aggregated results.

    python3 data/validation/inferencemax.py cdna3 results_70b_1k1k__agg_70b_1k1k.json \
        results_70b_1k8k__agg_70b_1k8k.json results_70b_8k1k__agg_70b_8k1k.json \
        > data/validation/inferencemax-cdna3.csv
    python3 data/validation/inferencemax.py hopper results_70b_*.json \
        > data/validation/inferencemax-hopper.csv

and the same with blackwell, cdna4 and trtllm (TensorRT-LLM's runs on
H200s and B200s); gptoss takes results_gptoss_*.json (GPT-OSS-120B under
vLLM on H100, H200, B200, MI300X, MI325X and MI355X, its GPTOSS table
below), and dsr1 results_dsr1_*.json (DeepSeek-R1-0528 under SGLang on
H200s, B200s, MI300Xs, MI325Xs and MI355Xs, its DSR1 table below).

With --median-ttft after the family, each run's median TTFT (a
ttft_ms_p50 row) stands where its mean's would: a check of the body of
the TTFT distribution apart from its tail (docs/simulator.md,
"InferenceMAX's served loops"); the committed files keep the means.

The JSON files: SemiAnalysis's InferenceMAX nightly results (its CI's
aggregated artifacts), as committed in the public repository
denosys/InferenceMAX (Apache License 2.0), commit
cc3cd8beecac60d00598bdf4ee2bc4a060eaf7d2, docs/data/ (data/validation/
README.md says more). Each vLLM run of Llama-3.3-70B on the family's GPUs
(cdna3: MI300X, MI325X; hopper: H100, H200; FP8; blackwell: B200, cdna4:
MI355X, FP8 and FP4) gives three rows here:
mean TTFT, mean TPOT and output tokens/s (the file's per-GPU output
throughput times TP). The conditions are the repository's scripts'
(benchmarks/70b_fp8_{mi300x,mi325x,h100,h200}_*.sh and
.github/workflows/70b-tmpl.yml): on CDNA3 and CDNA4 vLLM 0.10.1 on ROCm
7.0, --max-num-batched-tokens 131072, --gpu-memory-utilization 0.94; on
Hopper and Blackwell vLLM 0.10.2 (vllm/vllm-openai:v0.10.2),
--max-num-batched-tokens 8192, --gpu-memory-utilization 0.9;
--max-num-seqs at the concurrency (512 on the B200); --kv-cache-dtype
fp8, no prefix caching; vLLM's
benchmark_serving.py (kimbochen/bench_serving) with random prompts of the
shape's lengths, --random-range-ratio 0.8, ten requests a user,
--max-concurrency at the concurrency and --request-rate inf (every user's
first request at once). Every vLLM script sets --async-scheduling, and
TensorRT-LLM 1.1's trtllm-serve runs its overlap scheduler by default
(disable_overlap_scheduler false, which the scripts leave): each row's
async_scheduling is yes.
"""
import json
import sys

SHAPES = {"1k1k": (1024, 1024), "1k8k": (1024, 8192), "8k1k": (8192, 1024)}
# The family's GPUs (InferenceMAX's name, the catalog's) and its servers'
# limits: --max-num-batched-tokens, --gpu-memory-utilization, the version.
# The sequence cap: None where the scripts set it at the concurrency.
# TensorRT-LLM's: trtllm-serve --max_num_tokens 16384, its own default
# batch limit (the validator's for TensorRT-LLM), an FP8 KV cache without
# block reuse; at 1k/1k below TP 8 its batch waiting
# (batch_wait_timeout_iters 20, batch_wait_max_tokens_ratio 0.9, the
# columns of those names; empty elsewhere). Its `stream_interval: 10` is
# not modelled.
# GPT-OSS-120B (InferenceMAX's "fp4": its MXFP4 experts) under vLLM, each
# GPU's script: the step budget (None: vLLM's default), the memory share,
# the sequence cap (None: at the concurrency; "" vLLM's default) and the
# version, and what the experts multiply against where the script names
# their kernels (the mxfp4_activations column): the B200's sets
# VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 (MXFP4 x MXFP8, fp8), the MI355X's
# VLLM_ROCM_USE_AITER_FUSED_MOE_A16W4=1 (16-bit activations, bf16); the
# others leave the GPU's default (16-bit: no FP4 cores). No KV-cache dtype
# is set (vLLM's auto: BF16), no prefix caching; the experts split by TP
# (no --enable-expert-parallel).
GPTOSS = {
    "h100": ("h100-sxm", 8192, 0.9, None, "vLLM 0.10.2", ""),
    "h200": ("h200", 8192, 0.9, None, "vLLM 0.10.2", ""),
    "b200": ("b200", 8192, 0.9, 512, "vLLM 0.10.2", "fp8"),
    "mi300x": ("mi300x", "", 0.95, "", "vLLM 0.10.1 ROCm 7.0", ""),
    "mi325x": ("mi325x", "", 0.95, "", "vLLM 0.10.1 ROCm 7.0", ""),
    "mi355x": ("mi355x", "", 0.95, "", "vLLM 0.10.1 ROCm 7.0", "bf16"),
}
# DeepSeek-R1-0528 under SGLang (benchmarks/dsr1_fp{8,4}_{h200,b200}_*.sh
# and dsr1_fp8_{mi300x,mi325x,mi355x}_docker.sh): by (GPU, precision),
# SGLang's version, --max-running-requests (a function of the shape; ""
# where the script leaves SGLang's default), --chunked-prefill-size,
# --mem-fraction-static, the KV cache's dtype, whether the experts are
# spread over the TP GPUs (--enable-ep-moe), whether the script sets
# --scheduler-recv-interval (the B200 scripts do, 30 at 16 users or more
# and 10 below: new requests taken every that many decode steps, the
# scheduler_recv_interval column; 1 elsewhere), and --max-prefill-tokens
# (32768 on the H200 and the B200 in FP8, 196608 on AMD's; "" where the
# script leaves SGLang's 16,384, the B200 in FP4). The AMD scripts also pass
# --num-continuous-decode-steps 4, which SGLang has read nowhere since
# sgl-project/sglang#2095 (November 2024, before 0.4): its 0.5 scheduler
# runs one step a pass, so the column is not there to set. Left out: the
# MI355X's FP4 runs (amd/DeepSeek-R1-0528-MXFP4-Preview, whose quantised
# layers and activations the engine's fp4 would have to be checked
# against) and the GB200's multi-node ones.
DSR1 = {
    ("h200", "fp8"): ("SGLang 0.5.2rc2", lambda isl, osl: 512 if (isl, osl) == (1024, 1024) else 256, 32768, 0.82,
                      "auto", False, False, 32768),
    ("b200", "fp8"): ("SGLang 0.5.3rc1", lambda isl, osl: 128, 32768, 0.82, "fp8", False, True, 32768),
    ("b200", "fp4"): ("SGLang 0.5.3rc1", lambda isl, osl: 256, 16384, 0.85, "fp8", True, True, ""),
    ("mi300x", "fp8"): ("SGLang 0.5.2 ROCm 7.0 (rocm/7.0 sgl-dev-v0.5.2 image of 2025-09-15)", lambda isl, osl: "",
                        196608, 0.8, "auto", False, False, 196608),
    ("mi325x", "fp8"): ("SGLang 0.5.2 ROCm 7.0 (rocm/7.0 sgl-dev-v0.5.2 image of 2025-09-15)", lambda isl, osl: "",
                        196608, 0.8, "auto", False, False, 196608),
    ("mi355x", "fp8"): ("SGLang 0.5.2 ROCm 7.0 (rocm/7.0 sgl-dev-v0.5.2 image of 2025-09-15)", lambda isl, osl: "",
                        196608, 0.8, "auto", False, False, 196608),
}
FAMILIES = {
    "trtllm": ({"h200-trt": "h200", "b200-trt": "b200"}, 16384, None, "TensorRT-LLM 1.1.0rc2.post2", ("fp8", "fp4"), None),
    "cdna3": ({"mi300x": "mi300x", "mi325x": "mi325x"}, 131072, 0.94, "vLLM 0.10.1 ROCm 7.0", ("fp8",), None),
    "hopper": ({"h100": "h100-sxm", "h200": "h200"}, 8192, 0.9, "vLLM 0.10.2", ("fp8",), None),
    "blackwell": ({"b200": "b200"}, 8192, 0.9, "vLLM 0.10.2", ("fp8", "fp4"), 512),
    "cdna4": ({"mi355x": "mi355x"}, 131072, 0.94, "vLLM 0.10.1 ROCm 7.0", ("fp8", "fp4"), None),
}
HEADER = (
    "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,"
    "range_ratio,start,max_num_seqs,max_num_batched_tokens,memory_fraction,kv_cache,client,async_scheduling,metric,value,"
    "unit,split,source"
)


def runs(paths):
    """Each run of the results files, with its shape: by GPU, precision,
    TP and users."""
    for path in paths:
        shape = next(s for s in SHAPES if f"_{s}_" in path or path.endswith(f"{s}.json"))
        for r in sorted(json.load(open(path)), key=lambda r: (r["hw"], r["precision"], r["tp"], r["conc"])):
            yield shape, r


def emit(name, common, shape, version, r, ttft=True):
    """A run's rows: its mean TTFT (unless left out), mean TPOT and output
    tokens/s (the file's per-GPU throughput times TP)."""
    isl, osl = SHAPES[shape]
    what = name.split("-")[1]
    source = (
        f"InferenceMAX nightly (SemiAnalysis) results_{what}_{shape}, as copied in "
        f"denosys/InferenceMAX@cc3cd8be docs/data (Apache-2.0): {version}, "
        f"benchmark_serving random {isl}/{osl} range 0.8, max-concurrency {r['conc']}, request-rate inf"
    )
    if MEDIAN_TTFT:
        ttft_row = ("ttft_ms_p50", r["median_ttft"] * 1000, "ms")
    else:
        ttft_row = ("ttft_ms_mean", r["mean_ttft"] * 1000, "ms")
    for metric, value, unit in (
        ttft_row,
        ("tpot_ms_mean", r["mean_tpot"] * 1000, "ms"),
        ("output_tokens_per_s", r["output_tput_per_gpu"] * r["tp"], "tok/s"),
    ):
        if metric.startswith("ttft") and not ttft:
            continue
        print(f'{name}-{metric.split("_")[0]},{common},{metric},{round(value, 3)},{unit},held-out,"{source}"')


def load(shape, r):
    """The columns from the lengths to the range ratio."""
    isl, osl = SHAPES[shape]
    return f"{isl},{osl},concurrency,{r['conc']},{r['conc'] * 10},0.8,together"


def gptoss(paths):
    print(HEADER.replace(",async_scheduling,", ",async_scheduling,mxfp4_activations,"))
    for shape, r in runs(paths):
        if r["hw"] not in GPTOSS or r["framework"] != "vllm" or r["model"] != "openai/gpt-oss-120b":
            continue
        gpu, tp, conc = r["hw"], r["tp"], r["conc"]
        name, batched, memory, seqs, version, activations = GPTOSS[gpu]
        seqs = conc if seqs is None else seqs
        common = (
            f"gpt-oss-120b,{name},{tp},{tp},mxfp4,vllm,{load(shape, r)},{seqs},{batched},{memory},auto,http,yes,"
            f"{activations}"
        )
        emit(f"imx-gptoss-{gpu}-{shape}-tp{tp}-c{conc}", common, shape, version, r)


def dsr1(paths):
    print(HEADER.replace(",client,", ",client,mixed,ep,").replace(
        ",async_scheduling,", ",async_scheduling,scheduler_recv_interval,max_prefill_tokens,"))
    for shape, r in runs(paths):
        key = (r["hw"], r["precision"])
        if r["framework"] != "sglang" or key not in DSR1:
            continue
        gpu, tp, conc, precision = r["hw"], r["tp"], r["conc"], r["precision"]
        version, seqs, chunk, memory, kv, ep_moe, recv, prefill = DSR1[key]
        interval = (30 if conc >= 16 else 10) if recv else 1
        common = (
            f"deepseek-r1-0528,{gpu},{tp},{tp},{precision},sglang,{load(shape, r)},{seqs(*SHAPES[shape])},{chunk},"
            f"{memory},{kv},http,no,{tp if ep_moe else 1},yes,{interval},{prefill}"
        )
        name = f"imx-dsr1-{gpu}-{precision}-{shape}-tp{tp}-c{conc}"
        emit(name, common, shape, f"{version} {r['model']}", r)


def main(family, paths):
    if family == "gptoss":
        return gptoss(paths)
    if family == "dsr1":
        return dsr1(paths)
    gpus, batched, memory, version, precisions, seqs = FAMILIES[family]
    # InferenceMAX names TensorRT-LLM's runs by their GPU ("h200-trt"), so
    # the GPUs pick the engine's runs.
    trtllm = family == "trtllm"
    print(HEADER.replace(",async_scheduling,", ",async_scheduling,batch_wait_timeout_iters,batch_wait_max_tokens_ratio,")
          if trtllm else HEADER)
    for shape, r in runs(paths):
        if r["hw"] not in gpus or r["precision"] not in precisions:
            continue
        gpu, tp, conc, precision = r["hw"], r["tp"], r["conc"], r["precision"]
        # TensorRT-LLM's batch limit and memory share are its own defaults.
        engine, limits = ("tensorrt-llm", f",{batched},") if trtllm else ("vllm", f"{seqs or conc},{batched},{memory}")
        common = f"llama-3.3-70b,{gpus[gpu]},{tp},{tp},{precision},{engine},{load(shape, r)},{limits},fp8,http,yes"
        if trtllm:
            # The scripts' batch waiting, at 1,024/1,024 below TP 8.
            common += ",20,0.9" if shape == "1k1k" and tp < 8 else ",,"
        prec = "" if len(precisions) == 1 else f"{precision}-"
        emit(f"imx-70b-{gpu}-{prec}{shape}-tp{tp}-c{conc}", common, shape, version, r)


# Whether TTFT rows are the runs' medians (--median-ttft), not their means.
MEDIAN_TTFT = False

if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) > 1 and args[1] == "--median-ttft":
        MEDIAN_TTFT = True
        del args[1]
    if len(args) < 2 or args[0] not in (*FAMILIES, "gptoss", "dsr1"):
        sys.exit(__doc__)
    main(args[0], args[1:])
