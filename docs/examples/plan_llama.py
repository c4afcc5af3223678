"""Plan a Llama 2 70B run on 64 H100s from Python: sweep the parallel layout, look at the
best configurations in pandas, and plot throughput against memory.

    PYTHONPATH=build/python /usr/bin/python3 docs/examples/plan_llama.py [plot.png]
"""

import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import stepsim  # noqa: E402

# The shipped scenario is the base; "auto" means every value Megatron-LM accepts given the
# knobs before it. Relative paths resolve against the current folder, then scenarios/.
spec = {
    "base": "llama2-70b-h100-64.json",
    "search": {
        "training.tensor_model_parallel_size": "auto",
        "training.pipeline_model_parallel_size": "auto",
        "training.micro_batch_size": [1, 2],
        "training.recompute_granularity": "auto",
        "training.use_distributed_optimizer": "auto",
    },
    "constraints": {"memory_headroom": 0.05},
    "objective": "max_tokens_per_s",
    "top": 5,
}
rows = stepsim.sweep(spec, jobs=2)
df = pd.DataFrame(rows)
feasible = df[df.status == "feasible"]
print(f"{len(df)} configurations, {len(feasible)} feasible "
      f"({rows.summary['simulated']} simulated)")
best = feasible.sort_values("tokens_per_s", ascending=False).head(5)
print(best[["scenario", "step_time_s", "tokens_per_s", "mfu", "peak_memory_bytes"]]
      .to_string(index=False))

fig, ax = plt.subplots(figsize=(8, 5))
gib = 1024 ** 3
ax.scatter(feasible.peak_memory_bytes / gib, feasible.tokens_per_s, s=14, label="feasible")
pareto = pd.DataFrame(rows.pareto)  # flat rows like the sweep's, by peak memory
if not pareto.empty:
    ax.plot(pareto.peak_memory_bytes / gib, pareto.tokens_per_s, "r.-", label="Pareto front")
ax.set_xlabel("peak memory per GPU (GiB)")
ax.set_ylabel("tokens/s")
ax.ticklabel_format(axis="y", style="plain")
ax.set_title("Llama 2 70B on 64 H100: throughput vs memory")
ax.legend()
out = sys.argv[1] if len(sys.argv) > 1 else "plan_llama.png"
fig.savefig(out, dpi=100, bbox_inches="tight")
print(f"plot written to {out}")
