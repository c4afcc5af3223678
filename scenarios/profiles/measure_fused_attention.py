#!/usr/bin/env python3
"""Measures fused attention kernels on this GPU and writes them into a measured profile.

`stepsim calibrate --backend cuda` times attention as unfused products (cuBLASLt batched
GEMMs and a softmax kernel), which is what its validator executes. A scenario with fused
attention (Megatron's default attention_backend on Hopper: Transformer Engine's FusedAttention,
cuDNN's flash kernel) runs cuDNN's fused kernel instead. This script times that kernel for
every attention sample of a profile, forward and backward, through PyTorch's
scaled_dot_product_attention pinned to its cuDNN backend (the same cuDNN SDPA graph
Transformer Engine builds), and replaces the profile's attention samples with them.

Timing: CUDA events around each call, `--warmup` untimed calls, the median of `--repeats`.
Before each timed call the stream is given a GPU-side wait (`torch.cuda._sleep`) long enough
for the host to queue the whole call behind it, so the events time the kernels and not the
host that launches them (PyTorch's autograd takes longer to issue a small backward than the
GPU takes to run it; that host cost is the profile's `host` section). The backward of a
sample is the median of (forward + backward) minus the median forward, both timed on the
same inputs; the inputs are [batch, heads, seq, head_dim] bf16 with grouped-query key/value
heads (enable_gqa).

`--grid` also measures a grid (batch x heads 4..256, sequence 512..32k, head dim 64, 128 and
256, causal and not), so that kernels of other scenarios interpolate between measured points
instead of clamping at the few shapes of the scenarios the profile was made for. Needs PyTorch with CUDA; run it on the GPU
whose profile it is:

    python3 measure_fused_attention.py PROFILE.json --out PROFILE.json
"""

import argparse
import datetime
import json
import sys

import gpu_timing


def dtype_of(name, torch):
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(name)


# GPU clock cycles the stream waits before each timed call: ~5 ms at Hopper's 1.98 GHz, well
# over the host's time to queue a forward and backward (about 1 ms).
QUEUE_CYCLES = 10_000_000


def time_ms(fn, torch, warmup, repeats):
    return gpu_timing.time_ms(fn, torch, warmup, repeats, QUEUE_CYCLES)


def measure(sample, torch, backend, warmup, repeats):
    """Seconds of the forward and of the backward of one attention sample."""
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    dt = dtype_of(sample["dtype"], torch)
    b, h, g = sample["batch"], sample["heads"], sample["kv_heads"]
    s, d = sample["seq"], sample["head_dim"]
    q = torch.randn(b, h, s, d, device="cuda", dtype=dt, requires_grad=True)
    k = torch.randn(b, g, s, d, device="cuda", dtype=dt, requires_grad=True)
    v = torch.randn(b, g, s, d, device="cuda", dtype=dt, requires_grad=True)
    causal = sample["causal"]
    with sdpa_kernel([backend]):
        def forward():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=g != h)

        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=g != h)
        grad = torch.randn_like(out)

        def forward_backward():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=g != h)
            o.backward(grad)

        fwd = time_ms(forward, torch, warmup, repeats)
        both = time_ms(forward_backward, torch, warmup, repeats)
    return fwd * 1e-3, max(both - fwd, 0.0) * 1e-3


def grid_shapes():
    """(batch, heads, kv_heads, seq, head_dim, causal, dtype) of the --grid points: batch x
    heads in 4, 16, 64, 256 (heads up to 64, the rest as batch), sequence 512..32k, head dim
    64, 128, 256, causal and not; the largest (batch x heads x seq over 2^21) left out, each
    of them seconds of GPU time."""
    out = []
    for bh in (4, 16, 64, 256):
        heads = min(bh, 64)
        for seq in (512, 1024, 2048, 4096, 8192, 16384, 32768):
            if bh * seq > 2 ** 21:
                continue
            for head_dim in (64, 128, 256):
                for causal in (True, False):
                    out.append((bh // heads, heads, heads, seq, head_dim, causal, "bf16"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="a profile written by stepsim calibrate --backend cuda")
    ap.add_argument("--out", required=True, help="where to write the profile")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--grid", action="store_true",
                    help="also measure the grid of shapes described above")
    a = ap.parse_args()

    import torch
    from torch.nn.attention import SDPBackend

    if not torch.cuda.is_available():
        sys.exit("measure_fused_attention: no CUDA device")
    with open(a.profile) as f:
        profile = json.load(f)
    version = (f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
               f"{torch.cuda.get_device_name()}")
    shapes = {}
    for e in profile["attention"]:
        if e["dtype"] not in ("bf16", "fp16"):
            continue
        key = (e["batch"], e["heads"], e["kv_heads"], e["seq"], e["head_dim"], e["causal"],
               e["dtype"])
        shapes[key] = e
    if a.grid:
        for key in grid_shapes():
            shapes.setdefault(key, dict(zip(("batch", "heads", "kv_heads", "seq", "head_dim",
                                             "causal", "dtype"), key), grid=True))
    out = []
    for key in sorted(shapes):
        e = shapes[key]
        used = "cuDNN"
        try:
            fwd, bwd = measure(e, torch, SDPBackend.CUDNN_ATTENTION, a.warmup, a.repeats)
        except RuntimeError:
            used = "FlashAttention-2"
            fwd, bwd = measure(e, torch, SDPBackend.FLASH_ATTENTION, a.warmup, a.repeats)
        for backward, seconds in ((False, fwd), (True, bwd)):
            s = {k: e[k] for k in ("batch", "heads", "kv_heads", "seq", "head_dim", "causal")}
            s.update({"backward": backward, "dtype": e["dtype"], "seconds": seconds,
                      "citation": f"measured here{' (grid)' if e.get('grid') else ''}: {used} fused attention through PyTorch's "
                                  f"scaled_dot_product_attention ({version}), median of "
                                  f"{a.repeats}, {'forward+backward minus forward' if backward else 'forward'}"})
            out.append(s)
        print(f"attention b={e['batch']} h={e['heads']} kv={e['kv_heads']} s={e['seq']} "
              f"d={e['head_dim']} {'causal' if e['causal'] else 'full'}: forward "
              f"{fwd * 1e3:.3f} ms, backward {bwd * 1e3:.3f} ms ({used})", flush=True)
    profile["attention"] = out
    # One note for the attention samples: an earlier run's note goes with its samples.
    profile["notes"] = [n for n in profile["notes"] if not n.startswith("attention: fused kernels")]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    profile["notes"].append(
        "attention: fused kernels (cuDNN through PyTorch's scaled_dot_product_attention, "
        f"{version}, {when}), measured by scenarios/profiles/measure_fused_attention.py"
        f"{' --grid' if a.grid else ''} (GPU-side timing behind a queued wait, median of "
        f"{a.repeats} after {a.warmup} warm-ups); stepsim calibrate's unfused attention samples "
        "replaced")
    with open(a.out, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
