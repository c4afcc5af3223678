#!/usr/bin/env python3
"""Measures block-scaled FP8 GEMMs on this GPU and adds them to a measured profile.

Megatron-LM's `--fp8-recipe blockwise` is Transformer Engine's Float8BlockScaling: 1x128
tiles of activations and gradients and 128x128 blocks of weights, each with an fp32 scale.
Transformer Engine runs all three GEMMs of a linear through cuBLASLt in the TN layout with
per-block scales (transformer_engine/common/gemm/cublaslt_gemm.cu): fprop and dgrad scale
one operand per 128x128 block (the weight, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F) and
the other per 1x128 tile (VEC128_32F); wgrad scales both operands per 1x128 tile along the
tokens. These run other kernels than per-tensor scaled FP8 and at other speeds.

For every FP8 GEMM shape of the profile (`stepsim calibrate --backend cuda --fp8`), this
script times both kinds through PyTorch's torch._scaled_mm, which calls the same cuBLASLt
scaling modes: A [m, k] E4M3 with 1x128 scales, B [k, n] E4M3 (column-major) with 128x128
scales ("block_128x128": fprop, dgrad) or 1x128 scales along k ("block_1x128": wgrad), a
bf16 result. A batched sample (MoE experts) is timed as `batch` products one after the
other, as Transformer Engine runs experts without cuBLASLt's grouped GEMM. Timing: CUDA
events behind a queued GPU-side wait (torch.cuda._sleep), `--warmup` untimed calls, the
median of `--repeats`. Needs PyTorch with CUDA on a Hopper GPU and CUDA 12.9 or newer
(Transformer Engine's check_fp8_block_scaling_support):

    python3 measure_blockwise_fp8.py PROFILE.json --out PROFILE.json
"""

import argparse
import datetime
import json
import sys

import gpu_timing

QUEUE_CYCLES = 4_000_000  # ~2 ms at 1.98 GHz: longer than the host takes to queue a call


def ceil_div(a, b):
    return (a + b - 1) // b


def time_ms(fn, torch, warmup, repeats):
    return gpu_timing.time_ms(fn, torch, warmup, repeats, QUEUE_CYCLES)


def scales(torch, m, n, k, scaling):
    """torch._scaled_mm's block scales: A's 1x128 tiles as [m, k/128] with m contiguous;
    B's 128x128 blocks as [k/128, n/128] with k/128 contiguous, or its 1x128 tiles along k as
    [k/128, n] (the layouts its blockwise checks accept)."""
    a = torch.ones(ceil_div(k, 128), m, device="cuda").t()
    if scaling == "block_128x128":
        b = torch.ones(ceil_div(n, 128), ceil_div(k, 128), device="cuda").t()
    else:
        b = torch.ones(ceil_div(k, 128), n, device="cuda")
    return a, b


def measure(torch, m, n, k, batch, scaling, warmup, repeats):
    a = (torch.rand(m, k, device="cuda") - 0.5).to(torch.float8_e4m3fn)
    w = (torch.rand(n, k, device="cuda") - 0.5).to(torch.float8_e4m3fn)
    b = w.t()  # [k, n], column-major, as cuBLASLt's TN needs
    sa, sb = scales(torch, m, n, k, scaling)

    def call():
        for _ in range(batch):
            torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    return time_ms(call, torch, warmup, repeats) * 1e-3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="a profile written by stepsim calibrate --backend cuda --fp8")
    ap.add_argument("--out", required=True, help="where to write the profile")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("measure_blockwise_fp8: no CUDA device")
    with open(a.profile) as f:
        profile = json.load(f)
    version = (f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
               f"{torch.cuda.get_device_name()}")
    shapes = sorted({(s["m"], s["n"], s["k"], s["batch"]) for s in profile["gemm"]
                     if s["dtype"] == "fp8"})
    if not shapes:
        sys.exit("measure_blockwise_fp8: the profile has no FP8 GEMM samples "
                 "(stepsim calibrate --backend cuda --fp8)")
    per_tensor = {(s["m"], s["n"], s["k"], s["batch"]): s["seconds"] for s in profile["gemm"]
                  if s["dtype"] == "fp8" and s.get("scaling", "tensor") == "tensor"}
    kept = [s for s in profile["gemm"] if s.get("scaling", "tensor") == "tensor"]
    added = []
    for m, n, k, batch in shapes:
        for scaling in ("block_128x128", "block_1x128"):
            seconds = measure(torch, m, n, k, batch, scaling, a.warmup, a.repeats)
            added.append({"m": m, "n": n, "k": k, "batch": batch, "dtype": "fp8",
                          "layout": "TN", "scaling": scaling, "seconds": seconds})
        flops = 2.0 * batch * m * n * k
        t128, t1 = added[-2]["seconds"], added[-1]["seconds"]
        ratio = (f", per-tensor {per_tensor[(m, n, k, batch)] * 1e6:.1f} us"
                 if (m, n, k, batch) in per_tensor else "")
        print(f"fp8 m={m} n={n} k={k} batch={batch}: 128x128 {t128 * 1e6:.1f} us "
              f"({flops / t128 / 1e12:.0f} TFLOP/s), 1x128 {t1 * 1e6:.1f} us "
              f"({flops / t1 / 1e12:.0f} TFLOP/s){ratio}", flush=True)
    profile["gemm"] = kept + added
    profile["notes"] = [n for n in profile["notes"] if not n.startswith("fp8 blockwise:")]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    profile["notes"].append(
        f"fp8 blockwise: every FP8 GEMM shape also measured with block scaling ({version}, "
        f"{when}) by scenarios/profiles/measure_blockwise_fp8.py: torch._scaled_mm (cuBLASLt, "
        "TN, E4M3, bf16 result) with 1x128 x 128x128 scales (`scaling` block_128x128: "
        "Transformer Engine's Float8BlockScaling fprop and dgrad) and 1x128 x 1x128 "
        "(block_1x128: its wgrad); batched samples as products one after the other; GPU-side "
        f"timing behind a queued wait, median of {a.repeats} after {a.warmup} warm-ups")
    with open(a.out, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
