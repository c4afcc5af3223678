"""GPU-side timing shared by the measurement scripts beside it (measure_fused_attention.py,
measure_fp8_variants.py): CUDA events around each call, with the stream first given a wait
(`torch.cuda._sleep`) long enough for the host to queue the whole call behind it, so the
events time the kernels and not the host that launches them."""

import statistics


def time_ms(fn, torch, warmup, repeats, queue_cycles):
    """Median milliseconds of `repeats` calls of `fn` after `warmup` untimed ones; each timed
    call is queued behind a GPU wait of `queue_cycles` clock cycles."""
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        torch.cuda._sleep(queue_cycles)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)
