#!/usr/bin/env python3
"""Writes the public reference profiles a100-sxm4-80gb-public.json and
h100-sxm5-80gb-public.json from the cited microbenchmark figures below.

Every figure is a microbenchmark result somebody published (nccl-tests, cuBLAS matmul
sweeps, a BabelStream-style copy kernel, p2pBandwidthLatencyTest) and carries its source in
the sample's `citation`. Nothing here is fitted or tuned to end-to-end training step times
or throughputs. Where a figure is converted (bus bandwidth to seconds, a figure spread over
the group sizes a scenario needs), the conversion is nccl-tests' own (doc/PERFORMANCE.md):

    seconds = bytes * bus_factor(kind, n) / busbw + latency
    bus_factor = 2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter

and the citation says so. The profiles leave out the fits: stepsim fits the samples when it
loads a profile (the same least squares `stepsim calibrate` uses).

Run from anywhere: python3 scenarios/profiles/make_public_profiles.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "public data, not measured here"
DATE = "2026-11-22"
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


def ring_steps(kind, n):
    return 2 * (n - 1) if kind == "all_reduce" else n - 1


def bus_factor(kind, n):
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def gemm(m, n, k, tflops, citation):
    return {"m": m, "n": n, "k": k, "batch": 1, "dtype": "bf16",
            "seconds": 2 * m * n * k / (tflops * 1e12), "citation": citation}


def sizes(lo, hi):
    out, b = [], lo
    while b <= hi:
        out.append(b)
        b *= 2
    return out


def ring_collectives(kinds, group_sizes, per_node, busbw, step_latency_s, lo, hi, citation):
    """Samples for ring collectives over groups with `per_node` members on each node, from
    one bus bandwidth (bytes/s) and a latency per ring step."""
    out = []
    for kind in kinds:
        for n in group_sizes:
            for b in sizes(lo, hi):
                out.append({"kind": kind, "group_size": n, "nodes_spanned": n // per_node,
                            "bytes": b,
                            "seconds": step_latency_s * ring_steps(kind, n)
                            + b * bus_factor(kind, n) / busbw,
                            "citation": citation})
    return out


def p2p(inter_node, bandwidth, latency_s, lo, hi, citation):
    return [{"inter_node": inter_node, "bytes": b, "seconds": latency_s + b / bandwidth,
             "citation": citation} for b in sizes(lo, hi)]


def write(name, profile):
    path = os.path.join(HERE, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(profile, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("wrote", path)


# DP groups in the shipped scenarios put one rank on each node (TP fills the node); the
# embedding group joins the first and last pipeline stage (2 ranks, 2 nodes).
DP_GROUPS = [2, 4, 8, 16, 32, 64, 128]
KINDS = ["all_reduce", "all_gather", "reduce_scatter"]


def a100():
    # nccl-tests all_reduce_perf -b 32k -e 16G -f 2 -g 8 -n 50 on one 8x A100 node
    # (size in bytes, time in us), as printed in ml-engineering's network chapter.
    ar8 = [(32768, 43.83), (65536, 46.80), (131072, 51.76), (262144, 61.38),
           (524288, 80.40), (1048576, 101.9), (2097152, 101.4), (4194304, 101.5),
           (8388608, 133.5), (16777216, 276.6), (33554432, 424.0), (67108864, 684.6),
           (134217728, 1327.6), (268435456, 2420.6), (536870912, 4218.4),
           (1073741824, 8203.9), (2147483648, 16240), (4294967296, 32136),
           (8589934592, 64074), (17179869184, 127997)]
    ar8_cite = (MLE_NET + "#real-network-throughput: nccl-tests all_reduce_perf -b 32k -e 16G "
                "-f 2 -g 8 -n 50 on a single 8x A100 (NVLink 3) node")
    collectives = []
    for size, us in ar8:
        busbw = size * bus_factor("all_reduce", 8) / (us * 1e-6)
        collectives.append({"kind": "all_reduce", "group_size": 8, "nodes_spanned": 1,
                            "bytes": size, "seconds": us * 1e-6,
                            "citation": f"{ar8_cite}: size {size} B, time {us} us"})
        # A100 has no NVLink SHARP: NCCL rings all three collectives over the same links,
        # so all-gather and reduce-scatter reach the all-reduce's bus bandwidth.
        for kind in ("all_gather", "reduce_scatter"):
            collectives.append({
                "kind": kind, "group_size": 8, "nodes_spanned": 1, "bytes": size,
                "seconds": size * bus_factor(kind, 8) / busbw,
                "citation": f"{ar8_cite}: size {size} B, time {us} us, i.e. busbw "
                            f"{busbw / 1e9:.2f} GB/s; seconds = bytes*(n-1)/n/busbw "
                            "(ring, same bus bandwidth)"})
    # Across nodes: one HDR 200 Gb/s NIC per DP ring (DGX A100 has one per GPU).
    nic_busbw = 24e9
    step_latency = 19.0e-6 / 2
    inter_cite = (f"{NCCL_1048}: 2 nodes x 8 A100, all-reduce through one HDR NIC "
                  f"(NCCL_IB_HCA=mlx5_0) reaches 24 GB/s busbw; {NCCL_TESTS_150}: all_reduce_perf "
                  "between 2 A100-80GB nodes over HDR, one GPU per node, 8-64 B take ~19 us "
                  "(2 ring steps, 9.5 us per step); seconds = 9.5 us * ring steps + "
                  "bytes*bus_factor/24 GB/s")
    collectives += ring_collectives(KINDS, DP_GROUPS, 1, nic_busbw, step_latency, 32 * KiB,
                                    16 * GiB, inter_cite)
    mul = [(1 << 16, 9.516), (1 << 20, 10.127), (1 << 24, 31.874), (1 << 28, 362.559)]
    memory = [{"bytes": 2 * n, "seconds": us * 1e-6,
               "citation": f"{CCCL_A100}: cub babelstream 'mul' on NVIDIA A100-SXM4-80GB, int8, "
                           f"{n} elements (OffsetT I32), Ref Time {us} us; bytes = read + "
                           "written = 2 x elements"} for n, us in mul]
    step_intra = 43.83e-6 / 14
    p2p_samples = p2p(False, 274e9, step_intra, 64 * KiB, 4 * GiB,
                      MLE_NET + "#real-network-throughput: p2pBandwidthLatencyTest on 8x A100, "
                      "unidirectional P2P writes ~274 GB/s between GPUs; latency 3.13 us = the "
                      "32 KiB nccl-tests all-reduce (43.83 us) over its 14 ring steps")
    p2p_samples += p2p(True, nic_busbw, step_latency, 64 * KiB, 4 * GiB,
                       f"{NCCL_1048}: one HDR NIC 24 GB/s; {NCCL_TESTS_150}: ~19 us per "
                       "2-step all-reduce between 2 nodes, 9.5 us per step")
    return {
        "format_version": 1,
        "machine": "NVIDIA A100-SXM4-80GB, DGX A100 (8 GPUs, NVLink 3, 8x HDR 200 Gb/s)",
        "backend": "public",
        "date": DATE,
        "source": SOURCE,
        "notes": [
            "Assembled by scenarios/profiles/make_public_profiles.py from published "
            "microbenchmarks; every sample cites its figure. Never fitted to end-to-end "
            "training step times or throughputs.",
            "GEMM: one public cuBLAS (torch.matmul) measurement with its shape: ml-engineering's "
            "MAMF table. Every other shape takes its efficiency (86.9% of 312 TFLOPS) with a "
            "'beyond the measured range' warning, which is optimistic for small GEMMs: run "
            "`stepsim calibrate` on the target machine for the shape dependence.",
            "Collectives in a node: the nccl-tests all-reduce sweep over 8 GPUs; all-gather and "
            "reduce-scatter take its bus bandwidth (NCCL rings all three over NVLink 3). Groups "
            "of 2 or 4 GPUs in a node are rescaled from it by the cost model, with a warning.",
            "Across nodes: groups with one rank per node (data-parallel groups when TP fills "
            "the node, the embedding group), one HDR NIC each; groups with several ranks per "
            "node are not covered and fall back to the system file's roofline, with a warning.",
            "Memory-bound kernels: a BabelStream-style copy kernel (cub 'mul', int8).",
            "No public per-shape flash-attention figures were used: attention is costed as its "
            "matmuls plus its HBM traffic, with a warning.",
        ],
        "world_size": max(DP_GROUPS),
        "gemm": [gemm(1024, 10240, 5120, 271.2,
                      MAMF + ": NVIDIA A100 SXM, BF16, 271.2 TFLOPS mean at best shape "
                      "MxNxK 1024x10240x5120 (torch 2.6.0+cu126)")],
        "attention": [],
        "memory": memory,
        "collectives": collectives,
        "p2p": p2p_samples,
    }


def h100():
    # nccl-tests all_reduce_perf busbw (GB/s) on one 8x H200 node: NVLink 4 and NVSwitch
    # gen 3, the fabric of DGX H100 (ml-engineering's NVLink table lists H100 and H200 on
    # NVLink 4). NCCL uses NVLink SHARP (NVLS) from 2 MiB up.
    ar8 = [(32 * KiB, 3.20), (64 * KiB, 6.26), (128 * KiB, 12.40), (256 * KiB, 24.63),
           (512 * KiB, 48.30), (1 * MiB, 72.45), (2 * MiB, 91.48), (4 * MiB, 139.97),
           (8 * MiB, 182.03), (16 * MiB, 242.45), (32 * MiB, 298.44), (64 * MiB, 369.82),
           (128 * MiB, 411.21), (256 * MiB, 442.27), (512 * MiB, 455.82), (1 * GiB, 464.00),
           (2 * GiB, 468.31), (4 * GiB, 473.10), (8 * GiB, 475.16), (16 * GiB, 480.70)]
    ar8_cite = (MLE_NET_BENCH + ": nccl-tests all_reduce_perf on one 8x H200 node (NVLink 4 + "
                "NVSwitch gen 3, as in DGX H100; cross-checks: " + MLE_NET + "#sharp reports "
                "480 GBps for a 4 GiB all-reduce on an H100 node, and NVIDIA in "
                f"{NCCL_TESTS_290} calls 476 GB/s 'in the expected range for H100')")
    ring_ceiling = 367.61e9  # 8x H200, 16 GiB, NCCL_NVLS_ENABLE=0
    ring_cite = (MLE_NET + "#real-network-throughput: 8x H200 all-reduce with NCCL rings "
                 "(NCCL_NVLS_ENABLE=0) 367.61 GBps at 16 GiB")
    collectives = []
    for size, gbps in ar8:
        busbw = gbps * 1e9
        collectives.append({"kind": "all_reduce", "group_size": 8, "nodes_spanned": 1,
                            "bytes": size,
                            "seconds": size * bus_factor("all_reduce", 8) / busbw,
                            "citation": f"{ar8_cite}: size {size} B, busbw {gbps} GB/s; "
                                        "seconds = bytes*2(n-1)/n/busbw"})
        # All-gather and reduce-scatter are rings (NVLS accelerates reductions in the
        # switch): the all-reduce curve, capped at the ring's measured ceiling.
        ring_busbw = min(busbw, ring_ceiling)
        for kind in ("all_gather", "reduce_scatter"):
            collectives.append({
                "kind": kind, "group_size": 8, "nodes_spanned": 1, "bytes": size,
                "seconds": size * bus_factor(kind, 8) / ring_busbw,
                "citation": f"{ar8_cite}: size {size} B, busbw {gbps} GB/s capped at the ring "
                            f"ceiling ({ring_cite}); seconds = bytes*(n-1)/n/busbw"})
    # Across nodes: one NDR 400 Gb/s NIC per DP ring (DGX H100 has one per GPU). No public
    # small-message latency figure for NDR was found: samples start at 1 MiB, the fit's
    # latency comes out ~0 and smaller messages are flagged as outside the measured range.
    nic_busbw = 47e9
    inter_cite = (f"{NCCL_TESTS_290}: NVIDIA (AddyLaddy): 'For NDR @ 400Gbps you should see "
                  "46-48GB/s per NIC'; 47 GB/s busbw per ring; seconds = "
                  "bytes*bus_factor/busbw (no latency figure)")
    collectives += ring_collectives(KINDS, DP_GROUPS, 1, nic_busbw, 0.0, 1 * MiB, 16 * GiB,
                                    inter_cite)
    squares = [(1024, 176.62), (2048, 676.59), (4096, 788.72), (8192, 797.51),
               (10240, 719.72)]
    gemms = [gemm(s, s, s, tf, f"{TORCH_PERF_H100}: NVIDIA H100 80GB HBM3 (SXM), torch 2.7.0+cu128, "
                               f"BF16 torch.matmul {s}x{s}x{s}: {tf} TFLOPS (CUDA events, 10 "
                               "warm-up, 30 timed)") for s, tf in squares]
    gemms.append(gemm(2048, 2048, 13312, 794.5,
                      MAMF + ": NVIDIA H100 SXM, BF16, 794.5 TFLOPS mean at best shape MxNxK "
                      "2048x2048x13312 (torch 2.7.0+cu126)"))
    step_intra = 32 * KiB * bus_factor("all_reduce", 8) / 3.20e9 / 14
    p2p_samples = p2p(False, 376e9, step_intra, 64 * KiB, 4 * GiB,
                      MLE_NET + "#real-network-throughput: p2pBandwidthLatencyTest on 8x H100 "
                      "(NVLink 4), unidirectional P2P writes ~376 GB/s between GPUs; latency "
                      f"{step_intra * 1e6:.2f} us = the 32 KiB nccl-tests all-reduce time "
                      "(3.20 GB/s busbw) over its 14 ring steps")
    p2p_samples += p2p(True, nic_busbw, 0.0, 1 * MiB, 4 * GiB,
                       f"{NCCL_TESTS_290}: 46-48 GB/s per NDR 400 Gb/s NIC (no latency figure)")
    return {
        "format_version": 1,
        "machine": "NVIDIA H100-SXM5-80GB, DGX H100 (8 GPUs, NVLink 4, 8x NDR 400 Gb/s)",
        "backend": "public",
        "date": DATE,
        "source": SOURCE,
        "notes": [
            "Assembled by scenarios/profiles/make_public_profiles.py from published "
            "microbenchmarks; every sample cites its figure. Never fitted to end-to-end "
            "training step times or throughputs.",
            "GEMM: BF16 torch.matmul (cuBLAS) on square shapes 1024..10240 and the MAMF best "
            "shape. Shapes outside that box are clamped to its edge, with a warning.",
            "Collectives in a node: nccl-tests all-reduce over 8 GPUs of an H200 node, whose "
            "NVLink 4 / NVSwitch fabric is DGX H100's (cross-checked against two H100 figures, "
            "see the citations); NCCL uses NVLink SHARP for it from 2 MiB. All-gather and "
            "reduce-scatter use the same curve capped at the measured ring ceiling.",
            "Across nodes: groups with one rank per node, one NDR NIC each, 47 GB/s; no public "
            "small-message latency figure was found, so sizes below 1 MiB are flagged. Groups "
            "with several ranks per node fall back to the system file's roofline.",
            "Memory-bound kernels: no public HBM copy figure for H100 SXM5 was found; they fall "
            "back to the system file's roofline, with a warning.",
            "No public per-shape flash-attention figures were used: attention is costed as its "
            "matmuls plus its HBM traffic, with a warning.",
        ],
        "world_size": max(DP_GROUPS),
        "gemm": gemms,
        "attention": [],
        "memory": [],
        "collectives": collectives,
        "p2p": p2p_samples,
    }


if __name__ == "__main__":
    write("a100-sxm4-80gb-public.json", a100())
    write("h100-sxm5-80gb-public.json", h100())
