#!/usr/bin/env python3
"""Writes nim-dli-closed-loop.csv from the DLI course's dataset/nim.csv.

    python3 data/validation/dli-nim.py PATH/TO/nim.csv > data/validation/nim-dli-closed-loop.csv

nim.csv: genai-perf closed loops against an older NIM (TensorRT-LLM), from
NVIDIA's Deep Learning Institute course "Sizing LLM inference systems",
republished in the public repository wbing520/ai-performance-engineering
(Apache License 2.0), commit 0e25b2e236211ad01ed2221bd2c1cfa5b3f47b55,
code/ch10_inference/inference_gpu_cluster_sizing/dataset/nim.csv
(data/validation/README.md says more). Each row of it gives three rows
here: mean TTFT, mean ITL (genai-perf's, goodput's TPOT) and output
throughput.
"""
import csv
import sys

MODELS = {"meta-llama3-8b-instruct": "llama-3-8b", "meta-llama3-70b-instruct": "llama-3-70b"}
GPUS = {"A100-SXM4-80GB": "a100-80gb", "H100_80GB_HBM3": "h100-sxm"}
# FP16 and BF16 run alike; FP8 is FP8.
PRECISIONS = {"fp16": "bf16", "bf16": "bf16", "fp8": "fp8"}
SOURCE = (
    "NVIDIA DLI 'Sizing LLM inference systems', dataset/nim.csv (genai-perf, NIM TensorRT-LLM), "
    "wbing520/ai-performance-engineering@0e25b2e code/ch10_inference/inference_gpu_cluster_sizing/dataset/nim.csv "
    "(Apache-2.0)"
)


def main(path):
    rows = list(csv.DictReader(open(path, newline="")))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["id", "model", "gpu", "gpus", "tp", "precision", "engine", "input_tokens", "output_tokens",
                  "load_kind", "load_value", "start", "mixed", "metric", "value", "unit", "split", "queueing", "source"])
    seen = {}
    for r in rows:
        assert r["time_to_first_token-unit"] == "ns" and r["inter_token_latency-unit"] == "ns", r
        assert r["input_config-synthetic_input_tokens_stddev"] == "0", r
        model, gpu = MODELS[r["task_inputs-model"]], GPUS[r["task_inputs-GPU"]]
        gpus, precision = int(r["task_inputs-n_gpus"]), PRECISIONS[r["task_inputs-precision"]]
        inp, outp = int(r["input_config-synthetic_input_tokens_mean"]), int(r["input_config-output_tokens_mean"])
        # Every answer was its asked length (min_tokens = max_tokens, ignore_eos).
        assert abs(float(r["num_output_token-avg"]) - outp) < 0.5, r
        c = int(r["input_config-concurrency"])
        key = f"dli-{model}-{gpu}-tp{gpus}-{precision}-{inp}-{outp}-c{c}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:  # the same point measured again
            key += f"-run{seen[key]}"
        ttft = float(r["time_to_first_token-avg"]) / 1e6
        itl = float(r["inter_token_latency-avg"]) / 1e6
        tput = float(r["output_token_throughput-avg"])
        queueing = "yes" if ttft >= 3000 else "no"
        # `mixed` no: the same course's per-request export of this NIM shows
        # running requests making no token in a step that prefilled others
        # (docs/simulator.md, "Closed loops whose users start together").
        for suffix, metric, value, unit in [("ttft", "ttft_ms_mean", ttft, "ms"), ("itl", "tpot_ms_mean", itl, "ms"),
                                            ("tput", "output_tokens_per_s", tput, "tok/s")]:
            out.writerow([f"{key}-{suffix}", model, gpu, gpus, gpus, precision, "tensorrt-llm", inp, outp,
                          "concurrency", c, "together", "no", metric, f"{value:.6g}", unit, "held-out", queueing, SOURCE])


if __name__ == "__main__":
    main(sys.argv[1])
