#!/usr/bin/env python3
"""Measures the block-scaled FP8 GEMMs Transformer Engine runs on this GPU through PyTorch, and
puts them in a measured profile in place of its own: a cross-check of calibrate's.

`stepsim calibrate --backend cuda --fp8` times FP8 GEMMs with one scale per tensor (split and
fast accumulation) and, on Hopper with cuBLASLt 12.9 or newer, block-scaled ones through the
product the validator runs; this script times the latter another way. Megatron-LM's `--fp8-recipe blockwise` (Transformer Engine's
Float8BlockScaling; transformer_engine/common/gemm/cublaslt_gemm.cu, recipe/__init__.py) runs
block-scaled ones: fprop and dgrad scale the weight per 128x128 block
(CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F) and the other operand per 1x128 tile
(VEC128_32F), `"scaling": "block_128x128"`; wgrad scales both per 1x128 tile along the tokens,
`"block_1x128"`.

For every FP8 GEMM shape of the profile this script times both through PyTorch's
torch._scaled_mm, which calls cuBLASLt with those modes: A [m, k] E4M3, B [k, n] E4M3
(column-major: cuBLASLt's TN), a bf16 result, block scales as its blockwise checks want
them. It also times the per-tensor product the same way, for the printed ratios only (its
timing differs from `stepsim calibrate`'s own, which flushes the L2 cache first: a ratio
is only meaningful within one method). A batched sample (MoE experts) is timed as
`batch` products one after the other. Timing: CUDA events behind a queued GPU-side wait
(gpu_timing.py), `--warmup` untimed calls, the median of `--repeats`. Needs PyTorch with
CUDA on a Hopper GPU and CUDA 12.9 or newer for block scaling (Transformer Engine's
check_fp8_block_scaling_support):

    python3 measure_fp8_variants.py PROFILE.json --out PROFILE.json
"""

import argparse
import datetime
import json
import sys

import gpu_timing

QUEUE_CYCLES = 4_000_000  # ~2 ms at 1.98 GHz: longer than the host takes to queue a call
VARIANTS = ("block_128x128", "block_1x128")


def ceil_div(a, b):
    return (a + b - 1) // b


def time_ms(fn, torch, warmup, repeats):
    return gpu_timing.time_ms(fn, torch, warmup, repeats, QUEUE_CYCLES)


def scales(torch, m, n, k, variant):
    """torch._scaled_mm's scales: A's 1x128 tiles as [m, k/128] with m contiguous; B's
    128x128 blocks as [k/128, n/128] with k/128 contiguous, or its 1x128 tiles along k as
    [k/128, n] (the layouts its blockwise checks accept); per-tensor ("split"): two scalars."""
    if variant not in VARIANTS:
        one = torch.ones((), device="cuda")
        return one, one
    a = torch.ones(ceil_div(k, 128), m, device="cuda").t()
    if variant == "block_128x128":
        b = torch.ones(ceil_div(n, 128), ceil_div(k, 128), device="cuda").t()
    else:
        b = torch.ones(ceil_div(k, 128), n, device="cuda")
    return a, b


def measure(torch, m, n, k, batch, variants, warmup, repeats):
    """Seconds of each variant (and of "split", the per-tensor product)."""
    a = (torch.rand(m, k, device="cuda") - 0.5).to(torch.float8_e4m3fn)
    w = (torch.rand(n, k, device="cuda") - 0.5).to(torch.float8_e4m3fn)
    b = w.t()  # [k, n], column-major, as cuBLASLt's TN needs
    out = {}
    for variant in ("split",) + tuple(variants):
        sa, sb = scales(torch, m, n, k, variant)

        def call():
            for _ in range(batch):
                torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

        out[variant] = time_ms(call, torch, warmup, repeats) * 1e-3
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="a profile written by stepsim calibrate --backend cuda --fp8")
    ap.add_argument("--out", required=True, help="where to write the profile")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, of " + ", ".join(VARIANTS) + " (default: all)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    if not variants or any(v not in VARIANTS for v in variants):
        sys.exit(f"measure_fp8_variants: --variants={a.variants}: each must be one of "
                 + ", ".join(VARIANTS))

    import torch

    if not torch.cuda.is_available():
        sys.exit("measure_fp8_variants: no CUDA device")
    with open(a.profile) as f:
        profile = json.load(f)
    version = (f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
               f"{torch.cuda.get_device_name()}")
    shapes = sorted({(s["m"], s["n"], s["k"], s["batch"]) for s in profile["gemm"]
                     if s["dtype"] == "fp8"})
    if not shapes:
        sys.exit("measure_fp8_variants: the profile has no FP8 GEMM samples "
                 "(stepsim calibrate --backend cuda --fp8)")
    # The variants measured now replace their earlier samples.
    kept = [s for s in profile["gemm"] if s.get("scaling") not in variants]
    added = []
    for m, n, k, batch in shapes:
        t = measure(torch, m, n, k, batch, variants, a.warmup, a.repeats)
        for v in variants:
            added.append({"m": m, "n": n, "k": k, "batch": batch, "dtype": "fp8",
                          "layout": "TN", "scaling": v, "seconds": t[v]})
        flops = 2.0 * batch * m * n * k
        print(f"fp8 m={m} n={n} k={k} batch={batch}: " + ", ".join(
            f"{v} {t[v] * 1e6:.1f} us ({flops / t[v] / 1e12:.0f} TFLOP/s)"
            for v in ("split",) + tuple(variants)), flush=True)
    profile["gemm"] = kept + added
    profile["notes"] = [n for n in profile["notes"]
                        if not n.startswith(("fp8 blockwise:", "fp8 variants:"))]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    profile["notes"].append(
        f"fp8 variants: every FP8 GEMM shape also measured as {', '.join(variants)} "
        f"({version}, {when}) by scenarios/profiles/measure_fp8_variants.py: torch._scaled_mm "
        "(cuBLASLt, TN, E4M3, bf16 result); block_128x128: 1x128 x 128x128 scales "
        "(Transformer Engine's Float8BlockScaling fprop and dgrad), block_1x128: 1x128 x 1x128 "
        "(its wgrad); batched samples as products one after the other; "
        f"GPU-side timing behind a queued wait, median of {a.repeats} after {a.warmup} "
        "warm-ups")
    with open(a.out, "w") as f:
        json.dump(profile, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
