#!/usr/bin/env python3
"""Writes the public reference profiles a100-sxm4-80gb-public.json,
h100-sxm5-80gb-public.json, h200-sxm-141gb-public.json and b200-sxm-180gb-public.json from
the cited microbenchmark figures below.

Every figure is a microbenchmark result somebody published (nccl-tests, cuBLAS matmul
sweeps, a BabelStream-style copy kernel, p2pBandwidthLatencyTest) and carries its source in
the sample's `citation`. Nothing here is fitted or tuned to end-to-end training step times
or throughputs, and no sample is made by spreading a figure over sizes or groups it was not
measured at: collectives that were not measured are priced by NCCL's own tuning model in
stepsim (core/cost/src/nccl_model.cpp). Where a figure is converted (bus bandwidth to seconds),
the conversion is nccl-tests' own (doc/PERFORMANCE.md):

    seconds = bytes * bus_factor(kind, n) / busbw,  bus_factor = 2(n-1)/n for all-reduce

and the citation says so. The profiles leave out the fits: stepsim fits the samples when it
loads a profile (the same least squares `stepsim calibrate` uses).

Run from anywhere: python3 scenarios/profiles/make_public_profiles.py [--out DIR]
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "public data, not measured here"
# stepsim's own measurement of one H100 SXM5 (scenarios/profiles/README.md says how it was
# taken): the H100 profile takes from it what no public table has.
MEASURED_H100 = "h100-sxm5-80gb-measured.json"
SOURCE_H100 = "public data, and one H100 measured by stepsim where none is public"
# The same for one H200: no public per-shape GEMM, attention or memory figure for H200 was
# found, so the H200 profile's kernels are all stepsim's measurement; its links are public.
MEASURED_H200 = "h200-sxm-141gb-measured.json"
SOURCE_H200 = "public data, and one H200 measured by stepsim where none is public"
DATE = "2026-11-22"
DATE_H200 = "2026-11-28"
DATE_B200 = "2026-12-07"
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# --- sources -------------------------------------------------------------------------------
MLE = "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/"
MAMF = MLE + "compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table"
MLE_NET = MLE + "network/README.md"
MLE_NET_BENCH = ("https://github.com/stas00/ml-engineering/blob/"
                 "0cc3de50b2dd083c34d848a1dcb5bfe65fe3dace/network/benchmarks/README.md"
                 "#how-the-calls-are-timed")
TORCH_PERF_H100 = "https://github.com/zzc0721/torch-performance-test-data/issues/79"
CCCL_A100 = "https://github.com/NVIDIA/cccl/pull/7019"
NCCL_TESTS_150 = "https://github.com/NVIDIA/nccl-tests/issues/150"
NCCL_1048 = "https://github.com/NVIDIA/nccl/issues/1048"
NCCL_TESTS_290 = "https://github.com/NVIDIA/nccl-tests/issues/290"
XLA_SM90 = ("https://github.com/tensorflow/tensorflow/blob/372d578bb861cc5804e56d37d93aec931a59762c/"
            "third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h")
# XLA's newer table (B200 and MI300 only, no sm_80 or sm_90): cited where the A100 notes say why
# the A100 profile has no per-shape GEMM data.
XLA_PERF_TABLE = ("https://github.com/openxla/xla/blob/336bb15c32a11820a81b226ae502d9ebbfab4412/"
                  "xla/service/gpu/model/default_matmul_perf_table.txtpb")
# XLA's GPU cost model ships measured matmul throughput per shape for sm_90 (H100):
# (m, n, k, TFLOP/s) of its "bf16xbf16->bf16" entries with b = 1, every m, n, k in
# 256..4096 (powers of two), rounded to 0.1 TFLOP/s.
XLA_SM90_BF16 = [
    (256, 256, 256, 6.5), (256, 256, 512, 11.5), (256, 256, 1024, 19.5), (256, 256, 2048, 31.1),
    (256, 256, 4096, 84.3), (256, 512, 256, 11.5), (256, 512, 512, 22.0), (256, 512, 1024, 39.1),
    (256, 512, 2048, 62.4), (256, 512, 4096, 91.7), (256, 1024, 256, 22.7), (256, 1024, 512, 41.8),
    (256, 1024, 1024, 72.5), (256, 1024, 2048, 119.0), (256, 1024, 4096, 172.3), (256, 2048, 256, 41.8),
    (256, 2048, 512, 78.2), (256, 2048, 1024, 138.1), (256, 2048, 2048, 215.8), (256, 2048, 4096, 285.9),
    (256, 4096, 256, 78.0), (256, 4096, 512, 138.1), (256, 4096, 1024, 225.2), (256, 4096, 2048, 324.6),
    (256, 4096, 4096, 412.0), (512, 256, 256, 11.5), (512, 256, 512, 21.8), (512, 256, 1024, 39.3),
    (512, 256, 2048, 60.1), (512, 256, 4096, 91.1), (512, 512, 256, 21.6), (512, 512, 512, 40.7),
    (512, 512, 1024, 71.2), (512, 512, 2048, 114.7), (512, 512, 4096, 174.5), (512, 1024, 256, 43.5),
    (512, 1024, 512, 80.5), (512, 1024, 1024, 138.7), (512, 1024, 2048, 216.5), (512, 1024, 4096, 309.6),
    (512, 2048, 256, 79.3), (512, 2048, 512, 143.4), (512, 2048, 1024, 232.6), (512, 2048, 2048, 342.4),
    (512, 2048, 4096, 430.5), (512, 4096, 256, 134.2), (512, 4096, 512, 236.3), (512, 4096, 1024, 373.3),
    (512, 4096, 2048, 522.2), (512, 4096, 4096, 644.1), (1024, 256, 256, 22.0), (1024, 256, 512, 40.9),
    (1024, 256, 1024, 68.3), (1024, 256, 2048, 113.2), (1024, 256, 4096, 169.7), (1024, 512, 256, 42.9),
    (1024, 512, 512, 82.2), (1024, 512, 1024, 141.3), (1024, 512, 2048, 220.0), (1024, 512, 4096, 298.9),
    (1024, 1024, 256, 82.0), (1024, 1024, 512, 145.6), (1024, 1024, 1024, 236.3), (1024, 1024, 2048, 350.0),
    (1024, 1024, 4096, 470.1), (1024, 2048, 256, 139.5), (1024, 2048, 512, 237.6), (1024, 2048, 1024, 373.3),
    (1024, 2048, 2048, 524.3), (1024, 2048, 4096, 653.5), (1024, 4096, 256, 209.7), (1024, 4096, 512, 338.9),
    (1024, 4096, 1024, 490.3), (1024, 4096, 2048, 634.2), (1024, 4096, 4096, 738.5), (2048, 256, 256, 43.6),
    (2048, 256, 512, 77.3), (2048, 256, 1024, 135.8), (2048, 256, 2048, 216.1), (2048, 256, 4096, 307.5),
    (2048, 512, 256, 83.9), (2048, 512, 512, 142.8), (2048, 512, 1024, 235.9), (2048, 512, 2048, 347.7),
    (2048, 512, 4096, 451.2), (2048, 1024, 256, 141.6), (2048, 1024, 512, 238.4), (2048, 1024, 1024, 373.3),
    (2048, 1024, 2048, 523.3), (2048, 1024, 4096, 653.1), (2048, 2048, 256, 213.0), (2048, 2048, 512, 345.5),
    (2048, 2048, 1024, 493.9), (2048, 2048, 2048, 632.0), (2048, 2048, 4096, 738.0), (2048, 4096, 256, 299.3),
    (2048, 4096, 512, 450.4), (2048, 4096, 1024, 594.2), (2048, 4096, 2048, 715.4), (2048, 4096, 4096, 753.6),
    (4096, 256, 256, 82.2), (4096, 256, 512, 137.2), (4096, 256, 1024, 217.2), (4096, 256, 2048, 304.7),
    (4096, 256, 4096, 376.2), (4096, 512, 256, 142.5), (4096, 512, 512, 238.8), (4096, 512, 1024, 370.8),
    (4096, 512, 2048, 521.7), (4096, 512, 4096, 650.0), (4096, 1024, 256, 216.5), (4096, 1024, 512, 343.7),
    (4096, 1024, 1024, 488.1), (4096, 1024, 2048, 632.0), (4096, 1024, 4096, 738.5), (4096, 2048, 256, 304.0),
    (4096, 2048, 512, 447.0), (4096, 2048, 1024, 593.2), (4096, 2048, 2048, 716.1), (4096, 2048, 4096, 758.4),
    (4096, 4096, 256, 392.2), (4096, 4096, 512, 543.1), (4096, 4096, 1024, 677.4), (4096, 4096, 2048, 738.7),
    (4096, 4096, 4096, 783.3),
]
# Its entries with b = 2 and b = 4 (b independent m x n x k products in one batched call;
# XLA counts 2 * b * m * n * k FLOPs): (b, m, n, k, TFLOP/s), the same 256..4096 grid.
XLA_SM90_BF16_BATCHED = [
    (2, 256, 256, 256, 11.6), (2, 256, 256, 512, 21.6), (2, 256, 256, 1024, 37.0),
    (2, 256, 256, 2048, 60.3), (2, 256, 256, 4096, 91.3), (2, 256, 512, 256, 22.3),
    (2, 256, 512, 512, 42.0), (2, 256, 512, 1024, 72.9), (2, 256, 512, 2048, 119.6),
    (2, 256, 512, 4096, 175.2), (2, 256, 1024, 256, 43.0), (2, 256, 1024, 512, 80.7),
    (2, 256, 1024, 1024, 138.7), (2, 256, 1024, 2048, 216.1), (2, 256, 1024, 4096, 295.3),
    (2, 256, 2048, 256, 81.8), (2, 256, 2048, 512, 142.2), (2, 256, 2048, 1024, 226.3),
    (2, 256, 2048, 2048, 332.2), (2, 256, 2048, 4096, 418.8), (2, 256, 4096, 256, 142.5),
    (2, 256, 4096, 512, 228.3), (2, 256, 4096, 1024, 358.4), (2, 256, 4096, 2048, 462.8),
    (2, 256, 4096, 4096, 587.7), (2, 512, 256, 256, 21.7), (2, 512, 256, 512, 40.3),
    (2, 512, 256, 1024, 66.6), (2, 512, 256, 2048, 112.6), (2, 512, 256, 4096, 168.6),
    (2, 512, 512, 256, 43.4), (2, 512, 512, 512, 81.0), (2, 512, 512, 1024, 139.8),
    (2, 512, 512, 2048, 216.5), (2, 512, 512, 4096, 312.1), (2, 512, 1024, 256, 82.0),
    (2, 512, 1024, 512, 141.3), (2, 512, 1024, 1024, 235.1), (2, 512, 1024, 2048, 349.5),
    (2, 512, 1024, 4096, 461.2), (2, 512, 2048, 256, 138.7), (2, 512, 2048, 512, 235.5),
    (2, 512, 2048, 1024, 371.3), (2, 512, 2048, 2048, 525.3), (2, 512, 2048, 4096, 644.1),
    (2, 512, 4096, 256, 206.8), (2, 512, 4096, 512, 335.5), (2, 512, 4096, 1024, 486.7),
    (2, 512, 4096, 2048, 627.2), (2, 512, 4096, 4096, 734.7), (2, 1024, 256, 256, 43.7),
    (2, 1024, 256, 512, 76.4), (2, 1024, 256, 1024, 136.4), (2, 1024, 256, 2048, 209.7),
    (2, 1024, 256, 4096, 306.4), (2, 1024, 512, 256, 81.4), (2, 1024, 512, 512, 146.2),
    (2, 1024, 512, 1024, 237.6), (2, 1024, 512, 2048, 347.7), (2, 1024, 512, 4096, 449.6),
    (2, 1024, 1024, 256, 140.4), (2, 1024, 1024, 512, 238.4), (2, 1024, 1024, 1024, 373.9),
    (2, 1024, 1024, 2048, 519.2), (2, 1024, 1024, 4096, 649.6), (2, 1024, 2048, 256, 211.7),
    (2, 1024, 2048, 512, 339.8), (2, 1024, 2048, 1024, 493.4), (2, 1024, 2048, 2048, 631.2),
    (2, 1024, 2048, 4096, 739.0), (2, 1024, 4096, 256, 298.3), (2, 1024, 4096, 512, 445.9),
    (2, 1024, 4096, 1024, 596.5), (2, 1024, 4096, 2048, 714.6), (2, 1024, 4096, 4096, 747.7),
    (2, 2048, 256, 256, 78.8), (2, 2048, 256, 512, 139.2), (2, 2048, 256, 1024, 217.2),
    (2, 2048, 256, 2048, 310.0), (2, 2048, 256, 4096, 378.6), (2, 2048, 512, 256, 141.9),
    (2, 2048, 512, 512, 234.2), (2, 2048, 512, 1024, 371.8), (2, 2048, 512, 2048, 518.7),
    (2, 2048, 512, 4096, 645.3), (2, 2048, 1024, 256, 215.8), (2, 2048, 1024, 512, 342.4),
    (2, 2048, 1024, 1024, 489.0), (2, 2048, 1024, 2048, 629.4), (2, 2048, 1024, 4096, 737.2),
    (2, 2048, 2048, 256, 299.6), (2, 2048, 2048, 512, 447.0), (2, 2048, 2048, 1024, 600.2),
    (2, 2048, 2048, 2048, 717.7), (2, 2048, 2048, 4096, 756.7), (2, 2048, 4096, 256, 393.9),
    (2, 2048, 4096, 512, 542.3), (2, 2048, 4096, 1024, 678.7), (2, 2048, 4096, 2048, 729.1),
    (2, 2048, 4096, 4096, 779.3), (2, 4096, 256, 256, 135.0), (2, 4096, 256, 512, 234.6),
    (2, 4096, 256, 1024, 366.2), (2, 4096, 256, 2048, 508.4), (2, 4096, 256, 4096, 584.2),
    (2, 4096, 512, 256, 211.0), (2, 4096, 512, 512, 340.7), (2, 4096, 512, 1024, 487.2),
    (2, 4096, 512, 2048, 622.8), (2, 4096, 512, 4096, 729.7), (2, 4096, 1024, 256, 301.6),
    (2, 4096, 1024, 512, 445.5), (2, 4096, 1024, 1024, 598.2), (2, 4096, 1024, 2048, 713.4),
    (2, 4096, 1024, 4096, 750.6), (2, 4096, 2048, 256, 394.5), (2, 4096, 2048, 512, 546.4),
    (2, 4096, 2048, 1024, 680.9), (2, 4096, 2048, 2048, 733.3), (2, 4096, 2048, 4096, 783.2),
    (2, 4096, 4096, 256, 464.0), (2, 4096, 4096, 512, 607.7), (2, 4096, 4096, 1024, 693.0),
    (2, 4096, 4096, 2048, 763.0), (2, 4096, 4096, 4096, 807.7), (4, 256, 256, 256, 22.6),
    (4, 256, 256, 512, 41.2), (4, 256, 256, 1024, 71.4), (4, 256, 256, 2048, 117.7),
    (4, 256, 256, 4096, 171.6), (4, 256, 512, 256, 43.1), (4, 256, 512, 512, 80.7),
    (4, 256, 512, 1024, 135.0), (4, 256, 512, 2048, 204.6), (4, 256, 512, 4096, 286.5),
    (4, 256, 1024, 256, 81.4), (4, 256, 1024, 512, 140.1), (4, 256, 1024, 1024, 228.3),
    (4, 256, 1024, 2048, 327.8), (4, 256, 1024, 4096, 430.5), (4, 256, 2048, 256, 140.4),
    (4, 256, 2048, 512, 228.7), (4, 256, 2048, 1024, 358.9), (4, 256, 2048, 2048, 478.5),
    (4, 256, 2048, 4096, 588.0), (4, 256, 4096, 256, 206.5), (4, 256, 4096, 512, 335.1),
    (4, 256, 4096, 1024, 481.9), (4, 256, 4096, 2048, 602.9), (4, 256, 4096, 4096, 664.0),
    (4, 512, 256, 256, 42.4), (4, 512, 256, 512, 77.9), (4, 512, 256, 1024, 132.4),
    (4, 512, 256, 2048, 210.4), (4, 512, 256, 4096, 293.1), (4, 512, 512, 256, 77.5),
    (4, 512, 512, 512, 142.2), (4, 512, 512, 1024, 237.1), (4, 512, 512, 2048, 343.3),
    (4, 512, 512, 4096, 442.2), (4, 512, 1024, 256, 139.2), (4, 512, 1024, 512, 236.3),
    (4, 512, 1024, 1024, 375.4), (4, 512, 1024, 2048, 518.2), (4, 512, 1024, 4096, 641.8),
    (4, 512, 2048, 256, 209.1), (4, 512, 2048, 512, 336.4), (4, 512, 2048, 1024, 487.2),
    (4, 512, 2048, 2048, 629.4), (4, 512, 2048, 4096, 737.5), (4, 512, 4096, 256, 295.0),
    (4, 512, 4096, 512, 442.2), (4, 512, 4096, 1024, 592.2), (4, 512, 4096, 2048, 699.7),
    (4, 512, 4096, 4096, 730.1), (4, 1024, 256, 256, 80.9), (4, 1024, 256, 512, 135.8),
    (4, 1024, 256, 1024, 218.2), (4, 1024, 256, 2048, 314.0), (4, 1024, 256, 4096, 384.0),
    (4, 1024, 512, 256, 134.5), (4, 1024, 512, 512, 236.7), (4, 1024, 512, 1024, 371.8),
    (4, 1024, 512, 2048, 514.2), (4, 1024, 512, 4096, 642.2), (4, 1024, 1024, 256, 214.7),
    (4, 1024, 1024, 512, 337.7), (4, 1024, 1024, 1024, 489.8), (4, 1024, 1024, 2048, 626.1),
    (4, 1024, 1024, 4096, 735.9), (4, 1024, 2048, 256, 300.3), (4, 1024, 2048, 512, 442.2),
    (4, 1024, 2048, 1024, 598.2), (4, 1024, 2048, 2048, 712.7), (4, 1024, 2048, 4096, 743.6),
    (4, 1024, 4096, 256, 391.3), (4, 1024, 4096, 512, 541.7), (4, 1024, 4096, 1024, 674.9),
    (4, 1024, 4096, 2048, 718.7), (4, 1024, 4096, 4096, 773.5), (4, 2048, 256, 256, 136.1),
    (4, 2048, 256, 512, 235.5), (4, 2048, 256, 1024, 368.2), (4, 2048, 256, 2048, 493.9),
    (4, 2048, 256, 4096, 561.9), (4, 2048, 512, 256, 213.4), (4, 2048, 512, 512, 335.5),
    (4, 2048, 512, 1024, 487.2), (4, 2048, 512, 2048, 621.4), (4, 2048, 512, 4096, 730.4),
    (4, 2048, 1024, 256, 300.9), (4, 2048, 1024, 512, 443.3), (4, 2048, 1024, 1024, 596.5),
    (4, 2048, 1024, 2048, 710.6), (4, 2048, 1024, 4096, 745.0), (4, 2048, 2048, 256, 394.8),
    (4, 2048, 2048, 512, 542.3), (4, 2048, 2048, 1024, 674.0), (4, 2048, 2048, 2048, 725.7),
    (4, 2048, 2048, 4096, 779.1), (4, 2048, 4096, 256, 458.9), (4, 2048, 4096, 512, 607.3),
    (4, 2048, 4096, 1024, 688.6), (4, 2048, 4096, 2048, 752.5), (4, 2048, 4096, 4096, 801.9),
    (4, 4096, 256, 256, 206.5), (4, 4096, 256, 512, 335.1), (4, 4096, 256, 1024, 477.6),
    (4, 4096, 256, 2048, 588.7), (4, 4096, 256, 4096, 622.5), (4, 4096, 512, 256, 298.6),
    (4, 4096, 512, 512, 441.5), (4, 4096, 512, 1024, 589.0), (4, 4096, 512, 2048, 703.6),
    (4, 4096, 512, 4096, 728.6), (4, 4096, 1024, 256, 393.3), (4, 4096, 1024, 512, 542.0),
    (4, 4096, 1024, 1024, 673.8), (4, 4096, 1024, 2048, 720.5), (4, 4096, 1024, 4096, 777.6),
    (4, 4096, 2048, 256, 458.5), (4, 4096, 2048, 512, 607.5), (4, 4096, 2048, 1024, 687.9),
    (4, 4096, 2048, 2048, 759.3), (4, 4096, 2048, 4096, 808.7), (4, 4096, 4096, 256, 503.9),
    (4, 4096, 4096, 512, 619.9), (4, 4096, 4096, 1024, 725.5), (4, 4096, 4096, 2048, 764.6),
    (4, 4096, 4096, 4096, 793.1),
]
# The same table's B200 block ("sm_100_B200" in XLA_PERF_TABLE, XLA's measured matmul throughput
# per shape on B200): its b = 1 entries, every m, n, k in 256..4096 (powers of two), in
# TFLOP/s rounded to 0.1. One row per (m, k): the figures at n = 256, 512, 1024, 2048, 4096.
# "bf16xbf16->bf16" and "f8e4m3fnxf8e4m3fn->bf16" (E4M3 operands, bf16 result).
XLA_SM100_N = (256, 512, 1024, 2048, 4096)
XLA_SM100_BF16 = {
    (256, 256): (6.8, 13.4, 18.6, 46.1, 89.2), (256, 512): (12.6, 21.0, 39.1, 88.7, 163.3),
    (256, 1024): (20.2, 33.2, 81.2, 156.8, 292.3), (256, 2048): (34.6, 69.0, 136.7, 266.8, 464.4),
    (256, 4096): (53.1, 104.7, 205.9, 394.1, 651.4),
    (512, 256): (13.6, 23.5, 47.1, 90.9, 165.2), (512, 512): (17.9, 48.5, 89.5, 162.5, 291.7),
    (512, 1024): (44.1, 80.3, 157.2, 289.3, 492.4), (512, 2048): (69.7, 135.3, 263.1, 471.6, 761.3),
    (512, 4096): (103.4, 204.9, 396.4, 669.3, 990.5),
    (1024, 256): (26.2, 42.5, 90.4, 166.9, 274.4), (1024, 512): (47.9, 88.3, 164.1, 293.7, 467.6),
    (1024, 1024): (77.3, 152.8, 288.0, 492.5, 723.4),
    (1024, 2048): (135.3, 263.6, 468.5, 760.3, 981.3),
    (1024, 4096): (204.3, 394.1, 675.3, 1014.9, 1214.0),
    (2048, 256): (41.0, 90.7, 165.3, 276.1, 406.1), (2048, 512): (86.5, 162.1, 231.8, 470.1, 647.5),
    (2048, 1024): (150.1, 284.4, 496.1, 725.4, 911.4),
    (2048, 2048): (261.1, 466.0, 760.4, 985.8, 1172.8),
    (2048, 4096): (397.1, 666.9, 1017.7, 1208.5, 1342.5),
    (4096, 256): (89.7, 161.7, 271.1, 403.6, 514.7), (4096, 512): (160.9, 287.9, 465.2, 652.3, 805.3),
    (4096, 1024): (283.7, 490.6, 715.6, 913.8, 1075.6),
    (4096, 2048): (458.8, 762.4, 990.3, 1170.0, 1277.8),
    (4096, 4096): (645.1, 991.5, 1204.9, 1343.5, 1416.9),
}
XLA_SM100_FP8 = {
    (256, 256): (6.9, 12.4, 21.3, 41.7, 92.2), (256, 512): (13.2, 26.5, 50.7, 94.8, 157.9),
    (256, 1024): (21.0, 48.8, 81.2, 148.4, 311.4), (256, 2048): (44.0, 84.7, 162.4, 309.2, 566.2),
    (256, 4096): (68.8, 135.3, 260.6, 488.9, 930.5),
    (512, 256): (12.9, 26.2, 41.5, 93.5, 169.5), (512, 512): (25.9, 39.3, 91.7, 161.7, 329.0),
    (512, 1024): (41.6, 81.6, 154.3, 312.1, 584.7), (512, 2048): (84.5, 151.5, 300.9, 579.6, 972.4),
    (512, 4096): (131.3, 265.7, 477.6, 920.8, 1472.9),
    (1024, 256): (21.9, 41.6, 93.2, 175.2, 243.1), (1024, 512): (51.3, 101.7, 163.3, 333.9, 547.7),
    (1024, 1024): (82.6, 156.0, 333.0, 586.0, 863.1),
    (1024, 2048): (131.3, 304.3, 575.9, 979.5, 1431.7),
    (1024, 4096): (250.4, 487.1, 923.8, 1470.9, 1937.6),
    (2048, 256): (52.1, 88.5, 174.7, 293.6, 489.0), (2048, 512): (89.7, 179.9, 329.7, 503.6, 818.3),
    (2048, 1024): (166.1, 314.2, 504.5, 970.6, 1423.9),
    (2048, 2048): (305.7, 567.5, 985.1, 1427.7, 2035.2),
    (2048, 4096): (502.7, 856.0, 1484.7, 1955.8, 2491.3),
    (4096, 256): (84.5, 169.4, 225.6, 487.1, 666.9), (4096, 512): (176.1, 322.6, 538.9, 871.3, 1172.1),
    (4096, 1024): (312.8, 510.3, 850.8, 1332.2, 1895.4),
    (4096, 2048): (471.8, 979.5, 1462.6, 1833.5, 2485.0),
    (4096, 4096): (861.8, 1485.0, 1951.8, 2499.4, 2765.0),
}
FA_REPO = ("https://github.com/Dao-AILab/flash-attention/blob/"
           "0251105a2fb19d2957484b7f023cd8c115286ced/")
FA3_FWD = FA_REPO + "assets/flash3_fp16_fwd.png"
FA_BENCH = FA_REPO + "benchmarks/benchmark_flash_attention.py"


def bus_factor(kind, n):
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def gemm(m, n, k, tflops, citation, batch=1, dtype="bf16"):
    return {"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype,
            "seconds": 2 * batch * m * n * k / (tflops * 1e12), "citation": citation}


def sizes(lo, hi, step=2):
    out, b = [], lo
    while b <= hi:
        out.append(b)
        b *= step
    return out


def fa_benchmark_attention(head_dim, causal, tflops_by_seq, kernel, figure):
    """Forward attention samples from flash-attention's benchmark setup (FA_BENCH): hidden
    2048 (heads = 2048 / head_dim), batch x seqlen = 16k tokens, FP16. The benchmark counts
    4 * batch * seqlen^2 * heads * head_dim FLOPs, halved with the causal mask (what the
    kernel computes); seconds = those FLOPs / the published TFLOP/s."""
    out = []
    for seq, tflops in tflops_by_seq:
        batch, heads = 16384 // seq, 2048 // head_dim
        flops = 4 * batch * seq * seq * heads * head_dim // (2 if causal else 1)
        out.append({"batch": batch, "heads": heads, "kv_heads": heads, "seq": seq,
                    "head_dim": head_dim, "causal": causal, "backward": False,
                    "dtype": "fp16", "seconds": flops / (tflops * 1e12),
                    "citation": f"{figure}: {kernel} forward, head dim {head_dim}, "
                                f"{'causal' if causal else 'no causal mask'}, seqlen {seq}, "
                                f"batch {batch}, {heads} heads: {tflops} TFLOPs/s ({FA_BENCH} "
                                "setup and FLOP count, causal halved)"})
    return out


def p2p(inter_node, bandwidth, latency_s, lo, hi, citation):
    return [{"inter_node": inter_node, "bytes": b, "seconds": latency_s + b / bandwidth,
             "citation": citation} for b in sizes(lo, hi)]


def write(name, profile, out_dir=HERE):
    path = os.path.join(out_dir, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


# The world size the profiles are meant for: the largest shipped scenario's data-parallel
# groups (128 nodes x 4 members per node).
WORLD_SIZE = 512


def a100():
    # nccl-tests all_reduce_perf -b 32k -e 16G -f 2 -g 8 -n 50 on one 8x A100 node
    # (size in bytes, time in us), as printed in ml-engineering's network chapter.
    ar8 = [(32768, 43.83), (65536, 46.80), (131072, 51.76), (262144, 61.38),
           (524288, 80.40), (1048576, 101.9), (2097152, 101.4), (4194304, 101.5),
           (8388608, 133.5), (16777216, 276.6), (33554432, 424.0), (67108864, 684.6),
           (134217728, 1327.6), (268435456, 2420.6), (536870912, 4218.4),
           (1073741824, 8203.9), (2147483648, 16240), (4294967296, 32136),
           (8589934592, 64074), (17179869184, 127997)]
    ar8_cite = (MLE_NET + "#real-network-throughput: nccl-tests all_reduce_perf -g 8 on one "
                "8x A100 (NVLink 3) node")
    curve = [(size, size * bus_factor("all_reduce", 8) / (us * 1e-6)) for size, us in ar8]
    collectives = [{"kind": "all_reduce", "group_size": 8, "nodes_spanned": 1, "bytes": size,
                    "seconds": us * 1e-6, "citation": f"{ar8_cite}: size {size} B, time {us} us"}
                   for size, us in ar8]
    mul = [(1 << 16, 9.516), (1 << 20, 10.127), (1 << 24, 31.874), (1 << 28, 362.559)]
    memory = [{"bytes": 2 * n, "seconds": us * 1e-6,
               "citation": f"{CCCL_A100}: cub babelstream 'mul' on NVIDIA A100-SXM4-80GB, int8, "
                           f"{n} elements (OffsetT I32), Ref Time {us} us; bytes = read + "
                           "written = 2 x elements"} for n, us in mul]
    p2p_samples = p2p(False, 274e9, 43.83e-6 / 14, 64 * KiB, 4 * GiB,
                      MLE_NET + "#real-network-throughput: p2pBandwidthLatencyTest on 8x A100, "
                      "~274 GB/s unidirectional between GPUs; latency 3.13 us (notes)")
    p2p_samples += p2p(True, 24e9, 19.0e-6 / 2, 64 * KiB, 4 * GiB,
                       f"{NCCL_1048}: one HDR NIC 24 GB/s; {NCCL_TESTS_150}: ~19 us per 2-step "
                       "all-reduce, 9.5 us per step (notes)")
    return {
        "format_version": 1,
        "machine": "NVIDIA A100-SXM4-80GB, DGX A100 (8 GPUs, NVLink 3, 8x HDR 200 Gb/s)",
        "backend": "public",
        "date": DATE,
        "source": SOURCE,
        "notes": COMMON_NOTES + [
            "GEMM: one public cuBLAS (torch.matmul) measurement with its shape, ml-engineering's "
            "MAMF table (BF16; fp16 GEMMs borrow it, same 312 TFLOPS peak). Every other shape "
            "takes its efficiency (86.9% of 312 TFLOPS) with a 'beyond the measured range' "
            "warning, never faster than the roofline floor (its FLOPs at 312 TFLOPS, its operands "
            "and result through HBM at the system's bandwidth), optimistic for small GEMMs: run "
            "`stepsim calibrate` for the shape dependence. No public per-shape GEMM table for "
            "A100 SXM4 was found: XLA's GPU cost model ships measured matmul tables for sm_90 "
            f"(H100, {XLA_SM90}) and for sm_100 (B200) and gfx942 (MI300) ({XLA_PERF_TABLE}) "
            "only, ml-engineering's MAMF table gives "
            "each GPU's best shape only, and the one per-shape torch.matmul sweep found for an A100 "
            "(https://github.com/zzc0721/torch-performance-test-data/issues/108) is of an "
            "A100-PCIE-40GB, a different card.",
            "Collectives: the nccl-tests all-reduce sweep over the 8 GPUs of one node is the only "
            "measured collective. Every other group (all-gather, reduce-scatter, groups of 2 and "
            "4, groups across nodes) is priced by NCCL's own tuning model of the algorithm and "
            "protocol NCCL picks (core/cost/src/nccl_model.cpp, from NVIDIA/nccl src/graph/tuning.cc), "
            "not made from this sweep or from per-NIC figures.",
            "P2P in a node: p2pBandwidthLatencyTest's ~274 GB/s; latency 3.13 us = the 32 KiB "
            "nccl-tests all-reduce (43.83 us) over its 14 ring steps. Across nodes: one HDR NIC, "
            "9.5 us.",
            "Memory-bound kernels: a BabelStream-style kernel (cub 'mul', int8) at 4 sizes.",
        ],
        "world_size": WORLD_SIZE,
        "gemm": [gemm(1024, 10240, 5120, 271.2,
                      MAMF + ": NVIDIA A100 SXM, BF16, 271.2 TFLOPS mean at best shape "
                      "MxNxK 1024x10240x5120 (torch 2.6.0+cu126)")],
        "attention": [],
        "memory": memory,
        "collectives": collectives,
        "p2p": p2p_samples,
        "host": borrowed_host(MEASURED_H100, "another machine's host (an H100 VM), used for "
                              "A100 because no A100 host was measured"),
    }


def gemm_kind(s):
    """What a measured GEMM sample is, for its citation."""
    if s["dtype"] != "fp8":
        return f"{s['dtype']} GEMM" + (f", {s['layout']}" if "layout" in s else "")
    if "scaling" in s:
        return "block-scaled FP8 GEMM"
    return "FP8 GEMM, fast accumulation" if s.get("fast_accum") else "FP8 GEMM"


def borrowed_host(measured_name, gpu_words):
    """The measured profile's `host` section, copied as measured, with a citation naming the
    machine it came from: no public figure of eager PyTorch's per-kernel host cost exists, and
    without one a public profile would assume the host keeps ahead of the GPU (optimistic for
    small layers, whose kernels are shorter than their launches). The host is the CPU's and
    the framework's, not the GPU's: `gpu_words` says how the public profile's GPU relates."""
    with open(os.path.join(HERE, measured_name), encoding="utf-8") as f:
        m = json.load(f)
    host = dict(m["host"])
    cited = host["citation"]
    # "(torch 2.11.0+cu130, CUDA 13.0, NVIDIA H100 80GB HBM3)": the framework and the GPU.
    framework = cited[cited.index("(") + 1:cited.index(")")].split(", ")
    host["citation"] = (
        f"borrowed from scenarios/profiles/{measured_name} (a lent {framework[-1]} cloud VM, "
        f"{framework[0]}, {framework[1]}; its CPU model not recorded): measured on "
        f"{m['date'][:10]} by scenarios/profiles/measure_host_overhead.py; {gpu_words}")
    return host


def measured_h100():
    """What the H100 public profile takes from stepsim's own one-GPU measurement
    (MEASURED_H100, beside this script), because no public table has it: FP8 GEMMs (per-tensor
    and block-scaled), the
    memory-bound kernels' bandwidth by size and cuDNN's fused attention backward (the
    forward is public: flash-attention's FlashAttention-3 figure). Each sample is copied as
    measured. Its citation names the file and the kind of
    measurement, short (every predict reads every citation); the note returned describes the
    GPU, the date, the library versions and the method once."""
    with open(os.path.join(HERE, MEASURED_H100), encoding="utf-8") as f:
        m = json.load(f)
    versions = next(n for n in m["notes"] if n.startswith("cuda backend: "))
    gpu = m["machine"].split(": ", 1)[-1].replace(" measured", "")
    where = f"scenarios/profiles/{MEASURED_H100} (stepsim's measurement, notes)"
    fp8 = [dict(s, citation=f"{where}: {gemm_kind(s)}") for s in m["gemm"] if s["dtype"] == "fp8"]
    memory = [dict(s, citation=f"{where}: memory-bound kernel") for s in m["memory"]]
    attention_backward = [dict(s, citation=f"{where}: cuDNN fused attention backward")
                          for s in m["attention"] if s["backward"]]
    note = (f"Measured by stepsim on one {gpu} (SXM5) on {m['date'][:10]} "
            f"({versions[len('cuda backend: '):]}), copied from {MEASURED_H100}: its FP8 GEMMs "
            "(`stepsim calibrate --backend cuda --fp8 --flush-cache`: cuBLASLt, E4M3 operands, "
            "bf16 result, TN, split and fast accumulation, median of 10) and its memory-bound kernels (a scale-copy kernel, "
            "dst = 2 * src over floats, half the bytes read and half written; each repeat a "
            "train of back-to-back launches, per kernel; median of 10).")
    note += (" Its GEMMs were timed with operands whose values repeat every 1,024 elements (the "
             "operand fill of 2026-11-28 and before); on an H200 the same calibration with "
             "unperiodic operands measured products over 100 GFLOP a median 13-14% slower, so "
             "the FP8 GEMMs copied here are fast by about that until re-measured on an H100.")
    note += (" Its cuDNN fused attention backward samples (forward + backward minus forward "
             "through PyTorch's scaled_dot_product_attention pinned to cuDNN, GPU-side timing; "
             f"{attention_note(m)}) are copied too, and its other FP8 GEMM kernels ("
             f"{block_note(m)}).")
    return fp8, memory, attention_backward, note


def block_note(measured):
    """What the measured profile's FP8 variants note says of the versions, date and method."""
    found = [n for n in measured["notes"] if n.startswith("fp8 variants:")]
    if found:
        return found[-1][len("fp8 variants: "):]
    if any("block-scaled as Transformer Engine" in n for n in measured["notes"]):
        return ("block-scaled by the same `stepsim calibrate` run, through cuBLASLt's "
                "VEC128_32F and BLK128x128_32F scales as Transformer Engine calls them: "
                "block_128x128 (its fprop and dgrad), block_1x128 (its wgrad)")
    return "none"


def attention_note(measured):
    """What the measured profile's fused attention note says of the versions and date."""
    found = [n for n in measured["notes"] if n.startswith("attention: fused kernels")]
    return found[-1].split("(", 1)[1].split(")", 1)[0] if found else "no note"


def nvlink4_all_reduce():
    """nccl-tests all_reduce_perf busbw (GB/s) on one 8x H200 node: NVLink 4 and NVSwitch
    gen 3, the fabric of DGX H100 and DGX H200. NCCL uses NVLink SHARP (NVLS) from 2 MiB up."""
    ar8 = [(32 * KiB, 3.20), (64 * KiB, 6.26), (128 * KiB, 12.40), (256 * KiB, 24.63),
           (512 * KiB, 48.30), (1 * MiB, 72.45), (2 * MiB, 91.48), (4 * MiB, 139.97),
           (8 * MiB, 182.03), (16 * MiB, 242.45), (32 * MiB, 298.44), (64 * MiB, 369.82),
           (128 * MiB, 411.21), (256 * MiB, 442.27), (512 * MiB, 455.82), (1 * GiB, 464.00),
           (2 * GiB, 468.31), (4 * GiB, 473.10), (8 * GiB, 475.16), (16 * GiB, 480.70)]
    ar8_cite = (MLE_NET_BENCH + ": nccl-tests all_reduce_perf on one 8x H200 node (NVLink 4 + "
                "NVSwitch gen 3 as in DGX H100; notes)")
    return [{"kind": "all_reduce", "group_size": 8, "nodes_spanned": 1, "bytes": size,
             "seconds": size * bus_factor("all_reduce", 8) / (gbps * 1e9),
             "citation": f"{ar8_cite}: size {size} B, busbw {gbps} GB/s"}
            for size, gbps in ar8]


def nvlink4_ndr_p2p():
    """Point-to-point on DGX H100's links (NVLink 4 in a node, one NDR NIC across nodes),
    which DGX H200 has too. The latency in a node: the 32 KiB 8-GPU all-reduce over its 14
    ring steps."""
    step_intra = 32 * KiB * bus_factor("all_reduce", 8) / 3.20e9 / 14
    out = p2p(False, 376e9, step_intra, 64 * KiB, 4 * GiB,
              MLE_NET + "#real-network-throughput: p2pBandwidthLatencyTest on 8x H100, "
              f"~376 GB/s unidirectional between GPUs; latency {step_intra * 1e6:.2f} us "
              "(notes)")
    out += p2p(True, 47e9, 0.0, 1 * MiB, 4 * GiB,
               f"{NCCL_TESTS_290}: 46-48 GB/s per NDR 400 Gb/s NIC (no latency figure)")
    return out


def h100():
    collectives = nvlink4_all_reduce()
    squares = [(1024, 176.62), (2048, 676.59), (4096, 788.72), (8192, 797.51),
               (10240, 719.72)]
    gemms = [gemm(n, n, n, tf, f"{TORCH_PERF_H100}: NVIDIA H100 80GB HBM3 (SXM), torch "
                               f"2.7.0+cu128, BF16 torch.matmul {n}x{n}x{n}: {tf} TFLOPS (CUDA "
                               "events, 10 warm-up, 30 timed)") for n, tf in squares]
    gemms += [gemm(m, n, k, tf, f"{XLA_SM90}: kDefaultMatmulPTable, sm_90, b 1, m {m}, n {n}, "
                                f"k {k}, bf16xbf16->bf16: {tf} TFLOP/s (XLA's measured GEMM "
                                "table for H100)")
              for m, n, k, tf in XLA_SM90_BF16
              if (m, n, k) not in {(s, s, s) for s, _ in squares}]
    gemms += [gemm(m, n, k, tf, f"{XLA_SM90}: kDefaultMatmulPTable, sm_90, b {b}, m {m}, n {n}, "
                                f"k {k}, bf16xbf16->bf16: {tf} TFLOP/s (XLA's measured GEMM "
                                "table for H100; batched call, 2 * b * m * n * k FLOPs)", batch=b)
              for b, m, n, k, tf in XLA_SM90_BF16_BATCHED]
    gemms.append(gemm(2048, 2048, 13312, 794.5,
                      MAMF + ": NVIDIA H100 SXM, BF16, 794.5 TFLOPS mean at best shape MxNxK "
                      "2048x2048x13312 (torch 2.7.0+cu126)"))
    # cuDNN fused attention (what Transformer Engine runs on Hopper), forward, read off the bar
    # labels of flash-attention's FlashAttention-3 benchmark figure (H100 80GB SXM5, FP16):
    # panels (a), (b) head dim 64, (c), (d) head dim 128, (e), (f) head dim 256.
    fa3_fig = FA3_FWD + " (FlashAttention-3, arXiv:2407.08608, H100 80GB SXM5, FP16)"
    attention = fa_benchmark_attention(
        128, False, [(512, 497), (1024, 574), (2048, 617), (4096, 609), (8192, 600),
                     (16384, 595)], "cuDNN", fa3_fig)
    attention += fa_benchmark_attention(
        128, True, [(512, 315), (1024, 410), (2048, 484), (4096, 518), (8192, 529),
                    (16384, 539)], "cuDNN", fa3_fig)
    attention += fa_benchmark_attention(
        64, False, [(512, 335), (1024, 373), (2048, 395), (4096, 408), (8192, 412),
                    (16384, 413)], "cuDNN", fa3_fig)
    attention += fa_benchmark_attention(
        64, True, [(512, 225), (1024, 288), (2048, 334), (4096, 363), (8192, 379),
                   (16384, 388)], "cuDNN", fa3_fig)
    attention += fa_benchmark_attention(
        256, False, [(512, 470), (1024, 546), (2048, 580), (4096, 581), (8192, 580),
                     (16384, 581)], "cuDNN", fa3_fig)
    attention += fa_benchmark_attention(
        256, True, [(512, 308), (1024, 391), (2048, 450), (4096, 483), (8192, 497),
                    (16384, 509)], "cuDNN", fa3_fig)
    fp8_gemms, memory, attention_backward, measured_note = measured_h100()
    attention += attention_backward
    gemms += fp8_gemms
    p2p_samples = nvlink4_ndr_p2p()
    return {
        "format_version": 1,
        "machine": "NVIDIA H100-SXM5-80GB, DGX H100 (8 GPUs, NVLink 4, 8x NDR 400 Gb/s)",
        "backend": "public",
        "date": DATE,
        "source": SOURCE_H100,
        "notes": COMMON_NOTES + [
            measured_note,
            "GEMM: BF16 torch.matmul (cuBLAS) on square shapes 1024..10240, the MAMF best shape, "
            "and XLA's measured sm_90 matmul table (every m, n, k in 256..4096 at batch 1, 2 and "
            "4; where it has a square shape also measured with torch.matmul, the torch figure is "
            "kept). A batched sample sits at m * batch rows in the interpolation, as a batched "
            "query does, so the table reaches 16384 rows. No public per-shape FP8 GEMM table for "
            "H100 was found (XLA's FP8 entries are for sm_100 and gfx942): the FP8 GEMMs are "
            f"stepsim's own measurement ({MEASURED_H100}: cuBLASLt, TN, the layout Transformer "
            "Engine runs every FP8 GEMM in on Hopper, 256..16384 and the shipped scenarios' "
            "shapes). fp16 "
            "GEMMs borrow them (same 989 TFLOPS peak). The operand layout (NN fprop, NT dgrad, "
            "TN wgrad) is not in any of these tables: every layout takes the same figure. Shapes "
            "outside the measured box are clamped to its edge, with a warning.",
            "Collectives: nccl-tests all-reduce over the 8 GPUs of an H200 node, whose NVLink 4 / "
            "NVSwitch gen 3 fabric is DGX H100's (ml-engineering's NVLink table lists H100 and "
            "H200 on NVLink 4). Cross-checks on H100 itself: ml-engineering's SHARP section "
            "reports 480 GBps for a 4 GiB all-reduce on an H100 node, and NVIDIA in "
            "nccl-tests#290 calls 476 GB/s 'in the expected range for H100'. Every other group "
            "(all-gather, reduce-scatter, groups of 2 and 4, groups across nodes) is priced by "
            "NCCL's own tuning model (core/cost/src/nccl_model.cpp, from NVIDIA/nccl "
            "src/graph/tuning.cc), not made from this sweep or from per-NIC figures.",
            "P2P in a node: p2pBandwidthLatencyTest's ~376 GB/s; latency = the 32 KiB nccl-tests "
            "all-reduce time (3.20 GB/s busbw) over its 14 ring steps. Across nodes: one NDR "
            "NIC, 47 GB/s, no latency figure.",
            "Memory-bound kernels: no public HBM copy figure for H100 SXM5 was found; the "
            f"samples are stepsim's own measurement ({MEASURED_H100}: a scale-copy kernel, 192 KiB "
            "to 4 GiB).",
            "Attention: cuDNN fused attention forward (Transformer Engine's kernel on Hopper) at "
            "head dim 64, 128 and 256, causal and not, sequence 512..16k, from flash-attention's "
            "FlashAttention-3 benchmark figure (FP16; bf16 borrows it, same tensor-core rate, "
            "with a warning). The backward pass has no public samples (flash-attention's "
            "repository holds a forward-only figure for FlashAttention-3 / cuDNN and one of "
            "forward+backward together for FlashAttention-2, which does not split by "
            f"direction): its samples are {MEASURED_H100}'s cuDNN backward, bf16, on a grid of "
            "batch x heads 4..256, sequence 512..32k, head dim 64, 128 and 256, causal and not, "
            "and the measured scenarios' own shapes.",
        ],
        "world_size": WORLD_SIZE,
        "gemm": gemms,
        "attention": attention,
        "memory": memory,
        "collectives": collectives,
        "p2p": p2p_samples,
        "host": borrowed_host(MEASURED_H100, "the host of the H100 machine stepsim measured"),
    }


def h200():
    """DGX H200: every kernel sample is stepsim's own measurement of one H200 (MEASURED_H200),
    copied as measured, because no public per-shape table for H200 was found (XLA's sm_90
    table and the FlashAttention-3 figure are H100's, whose HBM is slower); the links are
    DGX H100's public figures, the same NVLink 4 / NVSwitch fabric and NDR NICs."""
    with open(os.path.join(HERE, MEASURED_H200), encoding="utf-8") as f:
        m = json.load(f)
    versions = next(n for n in m["notes"] if n.startswith("cuda backend: "))
    where = f"scenarios/profiles/{MEASURED_H200} (stepsim's measurement, notes)"

    gemms = [dict(s, citation=f"{where}: {gemm_kind(s)}") for s in m["gemm"]]
    memory = [dict(s, citation=f"{where}: memory-bound kernel") for s in m["memory"]]
    attention = [dict(s, citation=f"{where}: cuDNN fused attention "
                                   f"{'backward' if s['backward'] else 'forward'}")
                 for s in m["attention"]]
    return {
        "format_version": 1,
        "machine": "NVIDIA H200-SXM-141GB, DGX H200 (8 GPUs, NVLink 4, 8x NDR 400 Gb/s)",
        "backend": "public",
        "date": DATE_H200,
        "source": SOURCE_H200,
        "notes": [
            "Assembled by scenarios/profiles/make_public_profiles.py; every sample cites its "
            "figure. Never fitted or tuned to end-to-end training step times or throughputs.",
            f"GEMMs, attention and memory-bound kernels: measured by stepsim on one H200 (SXM, "
            f"141 GB HBM3e) on {m['date'][:10]} ({versions[len('cuda backend: '):]}), copied "
            f"as measured from {MEASURED_H200} (scenarios/profiles/README.md: the commands): "
            "bf16 GEMMs in each layout Transformer Engine runs (TN fprop, NN dgrad, NT wgrad) "
            "on the 256..16384 grid and the H200 scenarios' shapes, FP8 GEMMs (split and fast "
            "accumulation, block-scaled), cuDNN fused attention forward and backward "
            f"({attention_note(m)}), memory-bound kernels (trains of a scale-copy kernel, 1 MiB "
            "to 4 GiB). No public per-shape figure for H200 was found; H100's (XLA's sm_90 "
            "matmul table, the FlashAttention-3 figure) are another GPU's, with slower HBM. "
            "fp16 GEMMs borrow the bf16 samples (same 989 TFLOPS peak).",
            "Collectives: nccl-tests all-reduce over the 8 GPUs of an H200 node (NVLink 4, "
            "NVSwitch gen 3). Every other group is priced by NCCL's own tuning model "
            "(core/cost/src/nccl_model.cpp, from NVIDIA/nccl src/graph/tuning.cc).",
            "P2P: DGX H100's figures (p2pBandwidthLatencyTest's ~376 GB/s in a node, one NDR "
            "NIC's 47 GB/s across nodes): DGX H200 has the same NVLink 4 / NVSwitch fabric and "
            "the same ConnectX-7 NDR 400 Gb/s NICs (NVIDIA DGX H100/H200 User Guide, hardware "
            "overview). Latency in a node: the 32 KiB all-reduce over its 14 ring steps.",
            f"Host: {MEASURED_H200}'s measured host section, copied as measured (its "
            "citation names the machine); a DGX's own CPUs may issue faster or slower.",
        ],
        "world_size": WORLD_SIZE,
        "gemm": gemms,
        "attention": attention,
        "memory": memory,
        "collectives": nvlink4_all_reduce(),
        "p2p": nvlink4_ndr_p2p(),
        "host": borrowed_host(MEASURED_H200, "the host of the H200 machine stepsim measured"),
    }


def b200():
    """DGX B200: XLA's measured sm_100 matmul table (bf16 and FP8 per shape) is the only
    per-shape public figure found for B200. Everything else is left out of the profile, so
    that stepsim prices it from the DGX B200 system file (scenarios/systems/dgx-b200.json,
    whose data-sheet peaks and efficiencies cite their sources) and `predict`'s provenance
    says so: collectives by NCCL's own tuning model on the system's NVLink 5 / NIC figures,
    memory-bound kernels and P2P by the roofline at the data sheet's HBM and link bandwidth,
    attention as its matmuls (priced from these GEMM samples) plus its HBM traffic."""
    table = XLA_PERF_TABLE + " (XLA's measured GEMM table, key sm_100_B200)"
    gemms = []
    for dtype, rows, key in (("bf16", XLA_SM100_BF16, "bf16xbf16->bf16"),
                             ("fp8", XLA_SM100_FP8, "f8e4m3fnxf8e4m3fn->bf16")):
        for (m, k), by_n in sorted(rows.items()):
            gemms += [gemm(m, n, k, tf, f"{table}: b 1, m {m}, n {n}, k {k}, {key}: "
                                        f"{tf} TFLOP/s", dtype=dtype)
                      for n, tf in zip(XLA_SM100_N, by_n)]
    return {
        "format_version": 1,
        "machine": "NVIDIA B200-SXM-180GB, DGX B200 (8 GPUs, NVLink 5, 8x NDR 400 Gb/s)",
        "backend": "public",
        "date": DATE_B200,
        "source": SOURCE,
        "notes": [
            "Assembled by scenarios/profiles/make_public_profiles.py; every sample cites its "
            "figure. Never fitted or tuned to end-to-end training step times or throughputs, "
            "and nothing is copied from a Hopper profile.",
            "GEMM: XLA's measured matmul table for B200 (sm_100_B200 in "
            f"{XLA_PERF_TABLE}): its b = 1 entries, every m, n, k in 256..4096, "
            "bf16xbf16->bf16 and f8e4m3fnxf8e4m3fn->bf16 (the FP8 samples: E4M3 operands, one "
            "scale per tensor; the table does not say the accumulation mode, so they are "
            "recorded as split accumulation, the mode a profile without `fast_accum` means). "
            "Its b = 2 and b = 4 entries are not copied. The operand layout is not in the "
            "table: every layout takes the same figure. MXFP8 GEMMs (no public per-shape "
            "figure found) take these per-tensor FP8 samples with a warning; fp16 GEMMs "
            "borrow the bf16 ones (same 2.25 PFLOPS dense peak). Shapes past 4096 are clamped "
            "to the table's edge with a warning, never faster than the roofline floor.",
            "Data sheet only (no sample here, priced from scenarios/systems/dgx-b200.json, "
            "whose figures cite NVIDIA's HGX B200 specifications, NCCL's topo.h and "
            "torchao's measured B300 HBM fraction): collectives (NCCL's own tuning model on "
            "NVLink 5 at 900 GB/s and 400 Gb/s NICs; no public nccl-tests curve of an 8x B200 "
            "node was found), memory-bound kernels and P2P (the roofline at 7.7 TB/s HBM and "
            "the link bandwidths) and attention (its matmuls priced as GEMMs plus its HBM "
            "traffic: no public per-shape cuDNN/FlashAttention figure for B200 was found). "
            "`predict`'s provenance line names these parts 'NCCL's model', 'roofline' and "
            "'as GEMMs'.",
            f"Host: {MEASURED_H100}'s measured host section, borrowed as its citation says (no "
            "B200 host was measured); a DGX B200's own CPUs may issue faster or slower.",
        ],
        "world_size": WORLD_SIZE,
        "gemm": gemms,
        "attention": [],
        "memory": [],
        "collectives": [],
        "p2p": [],
        "host": borrowed_host(MEASURED_H100, "another machine's host (an H100 VM), used for "
                              "B200 because no B200 host was measured"),
    }


COMMON_NOTES = [
    "Assembled by scenarios/profiles/make_public_profiles.py from published microbenchmarks "
    "(nccl-tests, cuBLAS matmul sweeps, a BabelStream-style kernel, p2pBandwidthLatencyTest); "
    "every sample cites its figure. Never fitted or tuned to end-to-end training step times "
    "or throughputs.",
    "Conversions are nccl-tests' (doc/PERFORMANCE.md): seconds = bytes * bus_factor / busbw, "
    "bus_factor = 2(n-1)/n for all-reduce; P2P samples add a latency to bytes / bandwidth.",
    "Attention without samples (A100: flash-attention publishes FlashAttention-2 on A100 only "
    "as forward+backward together, which does not split into the per-direction samples a "
    "profile holds) is costed as its matmuls plus its HBM traffic, with a warning.",
    "Host: no public per-kernel figure of eager PyTorch's host cost exists; the host section "
    "is stepsim's measurement of a lent H100 VM (measure_host_overhead.py), borrowed as its "
    "citation says, so a prediction does not assume the host keeps ahead of the GPU.",
]


if __name__ == "__main__":
    # --out DIR writes there instead of beside this script (the golden test compares the two).
    out = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--out" else HERE
    if len(sys.argv) not in (1, 3) or (len(sys.argv) == 3 and sys.argv[1] != "--out"):
        sys.exit("usage: make_public_profiles.py [--out DIR]")
    os.makedirs(out, exist_ok=True)
    write("a100-sxm4-80gb-public.json", a100(), out)
    write("h100-sxm5-80gb-public.json", h100(), out)
    write("h200-sxm-141gb-public.json", h200(), out)
    write("b200-sxm-180gb-public.json", b200(), out)
