#!/usr/bin/env python3
"""Measure one GPU's prefill and decode step times for catalog models.

The engine's step-time model (docs/simulator.md, "One step's time") is a
roofline over a step's matrix products, attention and overheads. This script
times real steps of the same shapes on the GPU at hand, with PyTorch and
randomly initialised layers: a step's time does not depend on the weights'
values, so nothing is downloaded. The table it writes is compared with the
model by

    cargo run --release -p goodput-sim --example step_times -- FILE.csv

What a step is here (one GPU, tensor parallelism 1; BF16 activations and KV
cache; BF16 weights, and with --precisions fp8 also FP8 ones):
  * the embedding lookup of the step's tokens;
  * every decoder layer: RMSNorm, one fused QKV projection, attention
    (PyTorch's scaled_dot_product_attention: FlashAttention where PyTorch
    has it), the output projection, RMSNorm, the fused gate/up projection,
    SiLU times up, the down projection, and the two residual adds;
  * the final RMSNorm and the LM head for the last token of each sequence
    (engines compute logits only where they sample).
FP8 (E4M3, one scale per tensor, as TensorRT-LLM's and vLLM's static FP8
checkpoints scale): the four projections of every layer run as
torch._scaled_mm on FP8 weights, each casting its BF16 input to FP8 first
(engines fuse that cast into the norm before it) and padding the tokens to
a multiple of 16 (PyTorch's FP8 GEMM needs it); the embedding, LM head and
attention stay BF16, as the engine's model has them.
Left out: rotary embeddings, writing the new tokens' K and V into the
cache, sampling and the engine's scheduling (each an elementwise or host
cost the model counts in its per-layer, per-step and per-sequence overheads,
not in the roofline).

A prefill row is `batch` prompts of `tokens` tokens each, no cached prefix,
causal attention. A decode row is `batch` sequences making one token each
after `tokens` cached tokens. Decode steps are captured in a CUDA graph and
replayed, as vLLM and TensorRT-LLM replay theirs; prefill runs eagerly (its
kernels are long enough that launching them costs little), as vLLM runs its
prefills.

Memory: the layers cycle through a few sets of weights and KV buffers (as
many as fit in --weight-budget-gib, at least two). A set is hundreds of MB
to GBs, far more than the GPU's L2 cache, so every layer still reads its
weights and its KV from HBM, as a real model's would; the 70B's 140 GB of
BF16 weights need not fit.

Usage (on a GPU machine; 130 s on an H200, 334 s with --power-s 2.5, which
also records each shape's watts through NVML, as data/gpu/ holds them):

    python3 scripts/gpu-step-times.py --power-s 2.5 --out data/gpu/h200-step-times.csv

and a check of the script itself on a CPU, with a tiny model (seconds):

    python3 scripts/gpu-step-times.py --device cpu --quick --out /tmp/t.csv
"""

import argparse
import datetime
import math
import platform
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F

# The catalog's models (crates/goodput-sim/src/engine/catalog/models.rs):
# the comparison refuses a row whose sizes differ from the catalog's.
MODELS = {
    "llama-3.1-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336, vocab=128256),
    "llama-3.1-70b": dict(layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, intermediate=28672, vocab=128256),
    # A mixture of experts: 128 experts of 768, 8 a token (intermediate is
    # an expert's), BF16 only.
    "qwen3-30b-a3b": dict(
        layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, intermediate=768, vocab=151936, experts=128, top_k=8
    ),
    # Only for --quick on a CPU: not in the catalog, not compared.
    "tiny": dict(layers=4, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512, vocab=1024),
    "tiny-moe": dict(
        layers=4, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=128, vocab=1024, experts=8, top_k=2
    ),
}

# (batch, tokens) grids. Decode: tokens is the context each sequence attends to.
DECODE = [(b, s) for b in (1, 4, 16, 64, 256) for s in (128, 1024, 4096)]
PREFILL = [(1, 128), (1, 512), (1, 2048), (1, 8192), (4, 512), (16, 512), (4, 2048)]
QUICK_DECODE = [(1, 64), (4, 256)]
QUICK_PREFILL = [(1, 64), (2, 128)]

# The catalog's names for the GPUs torch may report.
GPU_NAMES = [
    ("GH200", "gh200"),
    ("GB200", "gb200"),
    ("B200", "b200"),
    ("H200", "h200"),
    ("H100 PCIe", "h100-pcie"),
    ("H100", "h100"),
    ("A100-SXM4-80GB", "a100-80gb"),
    ("A100 80GB", "a100-80gb"),
    ("L40S", "l40s"),
    ("L4", "l4"),
]


def catalog_gpu(device_name):
    for needle, name in GPU_NAMES:
        if needle.lower() in device_name.lower():
            return name
    return ""


def rms_norm(x, w, eps=1e-5):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype) * w


def sdpa(q, k, v, causal):
    """q [b, h, n, d], k and v [b, kv_h, s, d]: grouped-query attention."""
    try:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True), "sdpa"
    except TypeError:
        pass
    # Older PyTorch: no enable_gqa. Group the query heads over their KV head
    # so that K and V are read once, as a GQA kernel reads them.
    b, h, n, d = q.shape
    kvh = k.shape[1]
    g = h // kvh
    qg = q.reshape(b, kvh, g * n, d)
    scores = torch.matmul(qg, k.transpose(-1, -2)) / math.sqrt(d)
    if causal:
        s = k.shape[2]
        mask = torch.ones(n, s, dtype=torch.bool, device=q.device).tril(s - n)
        scores = scores.view(b, kvh, g, n, s).masked_fill(~mask, float("-inf")).view(b, kvh, g * n, s)
    p = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(p, v).reshape(b, h, n, d), "matmul"


FP8 = getattr(torch, "float8_e4m3fn", None)


def linear(x, w):
    """x [n, in] times w [out, in] transposed; w BF16, or FP8 beside its scale."""
    if isinstance(w, torch.Tensor):
        return F.linear(x, w)
    w, scale = w
    n = x.shape[0]
    pad = -n % 16
    if pad:
        x = F.pad(x, (0, 0, 0, pad))
    y = torch._scaled_mm(x.to(FP8), w.t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    return y[:n] if pad else y


class Layer:
    def __init__(self, m, device, dtype, fp8):
        h, d = m["hidden"], m["head_dim"]
        qkv = (m["heads"] + 2 * m["kv_heads"]) * d

        scale = torch.ones((), device=device, dtype=torch.float32)

        def w(rows, cols):
            t = torch.empty(rows, cols, device=device, dtype=dtype).normal_(0.0, 0.02)
            return (t.to(FP8), scale) if fp8 else t

        self.wqkv = w(qkv, h)
        self.wo = w(h, m["heads"] * d)
        if "experts" in m:
            e, f = m["experts"], m["intermediate"]

            def experts(rows, cols):
                return torch.empty(e, rows, cols, device=device, dtype=dtype).normal_(0.0, 0.02)

            self.router = torch.empty(e, h, device=device, dtype=dtype).normal_(0.0, 0.02)
            self.egu = as_grouped_b(experts(h, 2 * f))
            self.ed = as_grouped_b(experts(f, h))
        else:
            self.wgu = w(2 * m["intermediate"], h)
            self.wd = w(h, m["intermediate"])
        self.n1 = torch.ones(h, device=device, dtype=dtype)
        self.n2 = torch.ones(h, device=device, dtype=dtype)


# How torch._grouped_mm takes its second operand on this PyTorch and GPU:
# "row" (as made) or "column" (each expert's matrix stored transposed, the
# same bytes and FLOPs; some versions' kernels take only that layout). Set
# by probe_grouped_mm before a mixture of experts is built.
GROUPED_B = "row"


def as_grouped_b(t):
    return t.transpose(-2, -1).contiguous().transpose(-2, -1) if GROUPED_B == "column" else t


def probe_grouped_mm(device, dtype):
    """Finds a layout of the experts' weights that torch._grouped_mm takes."""
    global GROUPED_B
    errors = []
    for layout in ("row", "column"):
        GROUPED_B = layout
        a = torch.zeros(32, 64, device=device, dtype=dtype)
        b = as_grouped_b(torch.zeros(2, 64, 32, device=device, dtype=dtype))
        offs = torch.tensor([16, 32], device=device, dtype=torch.int32)
        try:
            torch._grouped_mm(a, b, offs=offs)
            sync(device)
            return layout
        except Exception as e:  # noqa: BLE001 - try the other layout
            errors.append(f"{layout}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    raise RuntimeError("torch._grouped_mm took neither layout (" + "; ".join(errors) + ")")


def layer_bytes(m, dtype_bytes=2):
    qkv = (m["heads"] + 2 * m["kv_heads"]) * m["head_dim"]
    h, f = m["hidden"], m["intermediate"]
    mlp = 3 * h * f * m.get("experts", 1) + h * m.get("experts", 0)
    return (qkv * h + h * m["heads"] * m["head_dim"] + mlp) * dtype_bytes


def moe(x, L, m):
    """A mixture-of-experts MLP over x [n, hidden]: the router's top k, the
    tokens sorted by expert, one grouped GEMM for the gate/up projections
    and one for the down (torch._grouped_mm), and the weighted sum back.
    Every step is on the device (no host sync), so a CUDA graph holds it."""
    n = x.shape[0]
    k, e = m["top_k"], m["experts"]
    weights, chosen = torch.topk(torch.softmax(F.linear(x, L.router).float(), dim=-1), k, dim=-1)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat)
    token = order // k
    counts = torch.zeros(e, device=x.device, dtype=torch.int64).scatter_add_(0, flat, torch.ones_like(flat))
    offs = torch.cumsum(counts, 0).to(torch.int32)
    xs = x.index_select(0, token)
    g, u = torch._grouped_mm(xs, L.egu, offs=offs).chunk(2, dim=-1)
    y = torch._grouped_mm(F.silu(g) * u, L.ed, offs=offs)
    y = y * weights.reshape(-1)[order].unsqueeze(-1).to(y.dtype)
    return torch.zeros(n, x.shape[1], device=x.device, dtype=x.dtype).index_add_(0, token, y)


class Model:
    def __init__(self, m, sets, device, dtype, fp8):
        self.m = m
        self.layers = [Layer(m, device, dtype, fp8) for _ in range(sets)]
        self.embed = torch.empty(m["vocab"], m["hidden"], device=device, dtype=dtype).normal_(0.0, 0.02)
        self.lm_head = torch.empty(m["vocab"], m["hidden"], device=device, dtype=dtype).normal_(0.0, 0.02)
        self.norm = torch.ones(m["hidden"], device=device, dtype=dtype)
        self.attention = "sdpa"

    def layer(self, i, x, b, n, kv):
        """x [b·n, hidden]; kv is None (prefill) or (k, v) of [b, kv_h, s, d]."""
        m = self.m
        L = self.layers[i % len(self.layers)]
        h, kvh, d = m["heads"], m["kv_heads"], m["head_dim"]
        y = rms_norm(x, L.n1)
        qkv = linear(y, L.wqkv).view(b, n, h + 2 * kvh, d)
        q = qkv[:, :, :h].transpose(1, 2)
        if kv is None:
            k = qkv[:, :, h : h + kvh].transpose(1, 2)
            v = qkv[:, :, h + kvh :].transpose(1, 2)
            o, self.attention = sdpa(q, k, v, causal=True)
        else:
            k, v = kv
            o, self.attention = sdpa(q, k, v, causal=False)
        o = o.transpose(1, 2).reshape(b * n, h * d)
        x = x + linear(o, L.wo)
        y = rms_norm(x, L.n2)
        if "experts" in m:
            return x + moe(y, L, m)
        g, u = linear(y, L.wgu).chunk(2, dim=-1)
        return x + linear(F.silu(g) * u, L.wd)

    def step(self, ids, b, n, kvs):
        """ids [b·n]; kvs: None for a prefill, else a list of (k, v) sets."""
        x = F.embedding(ids, self.embed)
        for i in range(self.m["layers"]):
            x = self.layer(i, x, b, n, None if kvs is None else kvs[i % len(kvs)])
        last = x.view(b, n, -1)[:, -1]
        return F.linear(rms_norm(last, self.norm), self.lm_head)


class PowerSampler:
    """The GPU's power draw read through NVML (nvidia-ml-py) every 50 ms in
    a thread, for the watts of a shape's timed runs. NVML gives Hopper's and
    Ampere's power as a mean over the last second, so a shape's watts are the
    median of the readings taken from one second after its timed runs began
    to their end, and its runs are repeated for at least `seconds` of wall
    time (--power-s) so that there are readings to take."""

    def __init__(self, device, seconds):
        import pynvml  # noqa: PLC0415 - only where power is read

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        self.seconds = seconds
        self.samples = []
        self.lock = threading.Lock()
        self.idle_w = self.read()
        threading.Thread(target=self.run, daemon=True).start()

    def read(self):
        return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3

    def run(self):
        while True:
            w = self.read()
            with self.lock:
                self.samples.append((time.perf_counter(), w))
                del self.samples[:-400]
            time.sleep(0.05)

    def watts(self, start, end):
        with self.lock:
            w = [x for t, x in self.samples if start + 1.0 <= t <= end]
        return statistics.median(w) if len(w) >= 3 else None


POWER = None


def timed(fn, device, min_reps, max_reps, budget_s):
    """Median seconds of fn() after two warm-up calls, the repetitions, and
    the watts drawn over them (None where power is not read)."""

    def once():
        """Seconds of one run: CUDA events on a GPU, the wall clock on a CPU."""
        if device.type != "cuda":
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    fn()
    fn()
    sync(device)
    times = []
    began = time.perf_counter()
    while POWER is not None and time.perf_counter() - began < POWER.seconds:
        # Reading power: the runs go on for --power-s of wall time, all timed.
        times.append(once())
    while len(times) < max_reps and (len(times) < min_reps or sum(times) < budget_s):
        times.append(once())
    watts = POWER.watts(began, time.perf_counter()) if POWER is not None else None
    return statistics.median(times), len(times), watts


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def graphed(fn, device):
    """fn captured in a CUDA graph (returns its replay), or fn itself where
    capture is not possible; and whether it was captured."""
    if device.type != "cuda":
        return fn, False
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g.replay, True
    except Exception as e:  # noqa: BLE001 - any capture failure falls back to eager
        print(f"  (CUDA graph capture failed, timing eagerly: {e})", file=sys.stderr)
        sync(device)
        return fn, False


def shown(watts):
    return f", {watts:.0f} W" if watts is not None else ""


def measure(args, device, dtype, name, precision, prefill, decode, write):
    """Times the grid for one model at one precision; returns how attention ran."""
    m = MODELS[name]
    fp8 = precision == "fp8"
    per_layer = layer_bytes(m, 1 if fp8 else 2)
    sets = max(2, min(m["layers"], int(args.weight_budget_gib * 2**30 // per_layer)))
    layout = ""
    if "experts" in m:
        layout = f", experts' weights {probe_grouped_mm(device, dtype)}-major for torch._grouped_mm"
    model = Model(m, sets, device, dtype, fp8)
    print(f"{name} {precision}: {m['layers']} layers cycling {sets} weight sets{layout}", file=sys.stderr)
    for b, p in prefill:
        ids = torch.randint(0, m["vocab"], (b * p,), device=device)
        with torch.inference_mode():
            t, reps, watts = timed(lambda: model.step(ids, b, p, None), device, 3, 20, args.budget_s)
        write(name, precision, "prefill", b, p, t, reps, False, sets, 0, watts)
        print(f"  prefill {b} x {p}: {t * 1e3:.3f} ms ({reps} runs){shown(watts)}", file=sys.stderr)
    kv_token_bytes = 2 * m["kv_heads"] * m["head_dim"] * 2
    for b, s in decode:
        per_set = b * s * kv_token_bytes
        if per_set > args.kv_budget_gib * 2**30:
            print(f"  decode {b} x {s}: skipped, its KV takes more than --kv-budget-gib", file=sys.stderr)
            continue
        kv_sets = max(1, min(m["layers"], int(args.kv_budget_gib * 2**30 // per_set)))
        kvs = [
            tuple(
                torch.empty(b, m["kv_heads"], s, m["head_dim"], device=device, dtype=dtype).normal_() for _ in range(2)
            )
            for _ in range(kv_sets)
        ]
        ids = torch.randint(0, m["vocab"], (b,), device=device)
        with torch.inference_mode():
            fn, graph = graphed(lambda: model.step(ids, b, 1, kvs), device)
            t, reps, watts = timed(fn, device, 3, 20, args.budget_s)
        write(name, precision, "decode", b, s, t, reps, graph, sets, kv_sets, watts)
        print(f"  decode {b} x {s}: {t * 1e3:.3f} ms ({reps} runs, graph {graph}){shown(watts)}", file=sys.stderr)
        kvs = fn = None  # frees the KV buffers and the graph before the next shape
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return model.attention


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="CSV to write")
    ap.add_argument(
        "--models", default="llama-3.1-8b,llama-3.1-70b,qwen3-30b-a3b", help="comma-separated: " + ", ".join(MODELS)
    )
    ap.add_argument("--device", default="cuda", help="cuda or cpu")
    ap.add_argument(
        "--precisions",
        default="",
        help="weights to time: bf16, fp8 (default: both where the GPU has FP8 tensor cores, else bf16)",
    )
    ap.add_argument("--gpu", default="", help="the catalog's name for the GPU (default: told from the device's name)")
    ap.add_argument("--quick", action="store_true", help="the tiny model and a few small shapes (a check of the script)")
    ap.add_argument("--weight-budget-gib", type=float, default=16.0, help="memory for the cycled sets of weights")
    ap.add_argument("--kv-budget-gib", type=float, default=24.0, help="memory for the cycled sets of KV buffers")
    ap.add_argument("--budget-s", type=float, default=1.0, help="seconds of repetitions a shape gets (3 to 20 of them)")
    ap.add_argument(
        "--power-s",
        type=float,
        default=0.0,
        help="read the GPU's power through NVML and run each shape for at least this many seconds"
        " (2.5 or more: NVML's reading is a mean over the last second); 0: power not read",
    )
    args = ap.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: run on a GPU machine, or --device cpu --quick to check the script")
    dtype = torch.bfloat16
    names = ["tiny", "tiny-moe"] if args.quick else [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n!r}: one of {', '.join(MODELS)}")
    decode = QUICK_DECODE if args.quick else DECODE
    prefill = QUICK_PREFILL if args.quick else PREFILL
    if device.type == "cuda":
        device_name = torch.cuda.get_device_name(device)
        cuda = torch.version.cuda or ""
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        device_name = platform.processor() or platform.machine()
        cuda = ""
    gpu = args.gpu or catalog_gpu(device_name)
    if args.precisions:
        precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    elif device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 9) and FP8 is not None:
        precisions = ["bf16", "fp8"]
    else:
        precisions = ["bf16"]
    for p in precisions:
        if p not in ("bf16", "fp8"):
            sys.exit(f"unknown precision {p!r}: bf16 or fp8")
        if p == "fp8" and FP8 is None:
            sys.exit("this PyTorch has no float8_e4m3fn: time bf16 only (--precisions bf16)")
    torch.manual_seed(0)
    global POWER
    if args.power_s > 0:
        if device.type != "cuda":
            sys.exit("--power-s reads a GPU's power: run on a GPU (--device cuda)")
        try:
            POWER = PowerSampler(device, args.power_s)
        except Exception as e:  # noqa: BLE001 - NVML missing or refused
            sys.exit(f"cannot read the GPU's power through NVML ({e}): install nvidia-ml-py, or leave out --power-s")

    started = time.time()
    out = open(args.out, "w")
    out.write("# Step times measured by scripts/gpu-step-times.py (randomly initialised layers, one GPU, TP 1).\n")
    out.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n")
    out.write(f"# device: {device_name}; torch {torch.__version__}; CUDA {cuda or 'none'}\n")
    out.write("# ms is the median of the runs; rows are written as they are measured\n")
    if POWER is not None:
        out.write(
            f"# watts: the median of NVML's power readings (each a mean over the last second) from 1 s after a"
            f" shape's timed runs began to their end, the runs lasting at least {args.power_s:g} s;"
            f" {POWER.idle_w:.1f} W before anything ran\n"
        )
    out.write(
        "gpu,model,precision,phase,batch,tokens,ms,runs,cuda_graph,weight_sets,kv_sets,"
        "layers,hidden,heads,kv_heads,head_dim,intermediate,vocab,experts,experts_per_token,watts\n"
    )
    out.flush()
    rows = 0

    def write(name, precision, phase, b, n, t, reps, graph, sets, kv_sets, watts):
        nonlocal rows
        m = MODELS[name]
        out.write(
            f"{gpu},{name},{precision},{phase},{b},{n},{t * 1e3:.4f},{reps},{'yes' if graph else 'no'},{sets},"
            f"{kv_sets},{m['layers']},{m['hidden']},{m['heads']},{m['kv_heads']},{m['head_dim']},"
            f"{m['intermediate']},{m['vocab']},{m.get('experts', 0)},{m.get('top_k', 0)},"
            f"{'' if watts is None else f'{watts:.1f}'}\n"
        )
        out.flush()
        rows += 1

    # Every model at BF16 first, then FP8: a run cut short keeps the most
    # models measured.
    for precision in precisions:
        for name in names:
            if precision != "bf16" and "experts" in MODELS[name]:
                out.write(f"# {name} {precision}: not timed (a mixture of experts is timed in BF16 only)\n")
                continue
            try:
                attention = measure(args, device, dtype, name, precision, prefill, decode, write)
                out.write(f"# {name} {precision}: attention by {attention}\n")
            except Exception as e:  # noqa: BLE001 - one model's failure leaves the others' rows
                print(f"{name} {precision}: failed: {e}", file=sys.stderr)
                out.write(f"# {name} {precision}: failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}\n")
            if device.type == "cuda":
                torch.cuda.empty_cache()
    out.write(f"# took {time.time() - started:.0f} s\n")
    out.close()
    print(f"wrote {rows} rows to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
