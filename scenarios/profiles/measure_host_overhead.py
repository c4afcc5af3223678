#!/usr/bin/env python3
"""Measures the host side of a PyTorch training step on this GPU: what issuing one kernel costs.

Megatron-LM runs eagerly: its Python thread walks each layer's modules, and every PyTorch op
spends host time (Python, the dispatcher, the caching allocator, cudaLaunchKernel) before its
kernel is queued. While the GPU is busy with earlier kernels that time is hidden; where kernels
are shorter than their issue the GPU waits on the host (a host-bound stretch), and after a host
synchronisation (`.item()`, `.tolist()`, `torch.cuda.synchronize()`) the host has to refill the
queue from empty. This script measures those costs with PyTorch's own ops:

- `op_issue_s`: host seconds per eager op while the GPU is kept busy (a `torch.cuda._sleep`
  kernel queued first, so no call waits on the GPU), for the ops a transformer layer is made
  of (elementwise, layer norm, GELU, softmax, dropout, a bf16 linear, a copy); the median of
  those is the profile's figure, each op's own in `ops`.
- `backward_op_issue_s`: the autograd engine's host seconds per backward kernel of a small
  GPT layer (the layer's backward host time divided by its kernel count from torch.profiler).
- `kernel_gap_s`: the GPU's own time per back-to-back tiny kernel (a CUDA graph of 1,000
  tiny adds replayed, so the host is out of it): the floor of any kernel's duration.
- `sync_s`: a host synchronisation's round trip with the GPU idle: `.item()` of a scalar
  (its device-to-host copy issued, the GPU reaching it, the host woken).

Each figure is the median of `--repeats` timings of `--count` calls. Needs PyTorch with CUDA;
run it on the GPU whose profile it is:

    python3 measure_host_overhead.py PROFILE.json --out PROFILE.json
"""

import argparse
import json
import statistics
import sys
import time


def busy_gpu(torch, seconds):
    """Queues a kernel that spins for about `seconds`, so host calls after it never wait."""
    torch.cuda._sleep(int(seconds * 2.0e9))


def host_per_call(torch, fn, count, repeats):
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        busy_gpu(torch, 0.02 + count * 200e-6)
        t = time.perf_counter()
        for _ in range(count):
            fn()
        times.append((time.perf_counter() - t) / count)
        torch.cuda.synchronize()
    return statistics.median(times)


def gpt_layer(torch, h, heads):
    nn = torch.nn
    F = torch.nn.functional

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h)
            self.fc1 = nn.Linear(h, 4 * h)
            self.fc2 = nn.Linear(4 * h, h)

        def forward(self, x):
            s, b, _ = x.shape
            y = self.ln1(x)
            q, k, v = self.qkv(y).view(s, b, 3, heads, h // heads).permute(2, 1, 3, 0, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            a = a.permute(2, 0, 1, 3).reshape(s, b, h)
            x = x + F.dropout(self.proj(a), 0.1, self.training)
            y = self.fc2(F.gelu(self.fc1(self.ln2(x))))
            return x + F.dropout(y, 0.1, self.training)

    return Layer().cuda().to(torch.bfloat16)


def count_kernels(torch, fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
               and not e.name.startswith("Memcpy") and not e.name.startswith("Memset"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", nargs="?", help="a profile to add the `host` section to")
    ap.add_argument("--out", help="where to write the profile (or, without one, the figures)")
    ap.add_argument("--count", type=int, default=200,
                    help="calls per timing (well under the launch queue's depth, so no call blocks)")
    ap.add_argument("--repeats", type=int, default=7, help="timings per figure")
    a = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("measure_host_overhead: no CUDA device")
    F = torch.nn.functional
    bf = torch.bfloat16
    x = torch.randn(8, 256, device="cuda", dtype=bf)
    w = torch.randn(256, 256, device="cuda", dtype=bf)
    ln_w = torch.ones(256, device="cuda", dtype=bf)
    dst = torch.empty_like(x)
    ops = {
        "add": lambda: x.add(1.0),
        "layer_norm": lambda: F.layer_norm(x, (256,), ln_w),
        "gelu": lambda: F.gelu(x),
        "softmax": lambda: torch.softmax(x, -1),
        "dropout": lambda: F.dropout(x, 0.1, True),
        "linear": lambda: F.linear(x, w),
        "copy": lambda: dst.copy_(x),
    }
    for fn in ops.values():  # warm: cuBLAS handles, allocator blocks, lazy module loads
        fn()
    torch.cuda.synchronize()
    per_op = {name: host_per_call(torch, fn, a.count, a.repeats) for name, fn in ops.items()}
    for name, s in per_op.items():
        print(f"host issue {name:10s} {s * 1e6:7.2f} us", flush=True)
    op_issue = statistics.median(per_op.values())

    # The GPU's own floor per kernel: a CUDA graph replays 1,000 tiny adds without the host.
    y = torch.zeros(256, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(1000):
            y.add_(1.0)
    gaps = []
    for _ in range(a.repeats):
        g.replay()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        stop.record()
        stop.synchronize()
        gaps.append(start.elapsed_time(stop) * 1e-3 / 1000)
    kernel_gap = statistics.median(gaps)
    print(f"GPU time per back-to-back tiny kernel (graph replay): {kernel_gap * 1e6:.2f} us")

    # A host synchronisation's round trip with an idle GPU.
    z = torch.zeros(1, device="cuda")
    syncs = []
    for _ in range(a.repeats):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(200):
            z.item()
        syncs.append((time.perf_counter() - t) / 200)
    sync = statistics.median(syncs)
    print(f"sync round trip (.item() after a tiny kernel, issue excluded): {sync * 1e6:.2f} us")

    # A small GPT layer (PyTorch modules, Megatron's local layer spec in spirit): host seconds
    # per forward and per backward kernel, kernels counted by torch.profiler.
    layer = gpt_layer(torch, 256, 4)
    inp = torch.randn(64, 2, 256, device="cuda", dtype=bf, requires_grad=True)
    grad = torch.randn(64, 2, 256, device="cuda", dtype=bf)

    def fwd():
        return layer(inp)

    def fwd_bwd():
        layer(inp).backward(grad)

    for _ in range(5):
        fwd_bwd()
    torch.cuda.synchronize()
    k_fwd = count_kernels(torch, fwd)
    k_all = count_kernels(torch, fwd_bwd)
    k_bwd = k_all - k_fwd
    t_fwd, t_bwd = [], []
    for _ in range(a.repeats):
        torch.cuda.synchronize()
        busy_gpu(torch, 0.2)
        t0 = time.perf_counter()
        for _ in range(5):
            out = layer(inp)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        busy_gpu(torch, 0.2)
        outs = [layer(inp) for _ in range(5)]
        torch.cuda.synchronize()
        busy_gpu(torch, 0.2)
        t2 = time.perf_counter()
        for o in outs:
            o.backward(grad)
        t3 = time.perf_counter()
        torch.cuda.synchronize()
        t_fwd.append((t1 - t0) / 5)
        t_bwd.append((t3 - t2) / 5)
    layer_fwd, layer_bwd = statistics.median(t_fwd), statistics.median(t_bwd)
    print(f"GPT layer (h 256, PyTorch modules): forward {k_fwd} kernels, host "
          f"{layer_fwd * 1e6:.1f} us ({layer_fwd / k_fwd * 1e6:.2f} us/kernel); backward "
          f"{k_bwd} kernels, host {layer_bwd * 1e6:.1f} us ({layer_bwd / k_bwd * 1e6:.2f} us/kernel)")

    version = f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"
    host = {
        "op_issue_s": op_issue,
        "forward_op_issue_s": layer_fwd / k_fwd,
        "backward_op_issue_s": layer_bwd / k_bwd,
        "kernel_gap_s": kernel_gap,
        "sync_s": sync,
        "ops": {k: v for k, v in sorted(per_op.items())},
        "layer": {"forward_kernels": k_fwd, "backward_kernels": k_bwd,
                  "forward_host_s": layer_fwd, "backward_host_s": layer_bwd},
        "citation": f"measured here by scenarios/profiles/measure_host_overhead.py ({version}); "
                    f"median of {a.repeats} timings of {a.count} calls",
    }
    print(json.dumps(host, indent=2))
    if a.out:
        if a.profile:
            with open(a.profile) as f:
                profile = json.load(f)
            profile["host"] = host
        else:
            profile = host
        with open(a.out, "w") as f:
            json.dump(profile, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
