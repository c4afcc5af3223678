// The validator's executor on the two CI scenarios of issue 39 (scenarios/validation/
// hybrid-mamba.json and fsdp2.json), single process with a FakeBackend: a Mamba layer's
// kernels run as the backend calls the op program says they are, with the Mamba-2 scan's FLOPs
// per tensor-parallel rank; a Megatron-FSDP step gathers every unit's parameters twice per
// micro-batch and reduce-scatters its gradients once, over the data-parallel group.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "fake_backend.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/ops/fsdp_units.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "stepsim/validator/executor.hpp"
#include "stepsim/validator/validate.hpp"
#include "validation_workloads.hpp"

namespace stepsim::calib {
namespace {

using testing::FakeBackend;
using testing::FixedCost;
using testing::split_sizes;

Workload load_validation(const std::string& name) {
  LoadOptions lo;
  lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/validation/" + name, lo);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// One step of rank 0 on a FakeBackend; the executor's tasks of its stage and the backend.
struct RankRun {
  std::vector<ExecTask> tasks;
  std::vector<std::string> log;
};

RankRun run_rank0(const Workload& w) {
  const WorkloadPlan plan = decompose(w);
  const FixedCost cost(1e-3);
  auto sim = sim::simulate(w, plan, cost, validation_simulate_options(false));
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : format_errors(sim.errors()));
  if (!sim.ok()) return {};
  const RankLayout layout = layout_of(w);
  FakeBackend b(0, 2, split_sizes(layout, 0));
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  auto m = execute_schedule(w, plan, *sim->schedule, b, o);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_errors(m.errors()));
  if (!m.ok()) return {};
  EXPECT_TRUE(m->complete);
  return RankRun{m->stage_tasks.at(0), b.log()};
}

// "M*M-" over TP 2: 8 Mamba heads of 64 (4 per rank), 2 groups of state 64 (1 per rank), one
// chunk of 128 tokens per sequence, 4 micro-batches. mamba_chunk_scan_combined's forward
// products per rank and micro-batch (_chunk_state_fwd, _bmm_chunk_fwd, _chunk_scan_fwd):
// 2 T H P N + 2 T Q N G + 2 T H P (Q + N), run by the backend as batched GEMMs.
TEST(ValidationScenarios, HybridMambaRunsTheScansProductsPerTensorRank) {
  const Workload w = load_validation("hybrid-mamba.json");
  ASSERT_EQ(w.model.hybrid_layer_pattern, "M*M-");
  ASSERT_EQ(w.training.tensor_model_parallel_size, 2);
  const RankRun r = run_rank0(w);
  ASSERT_FALSE(r.tasks.empty());
  const double t = 128, heads = 4, p = 64, n = 64, q = 128, groups = 1;
  const double per_layer = 2 * t * heads * p * n + 2 * t * q * n * groups +
                           2 * t * heads * p * (q + n);
  double forward_flops = 0;
  std::int64_t conv1d = 0;
  std::int64_t mamba_ops = 0;
  for (const ExecTask& task : r.tasks) {
    if (task.kind != ExecTask::Kind::kOp) continue;
    const Op& op = task.op;
    if (op.name.starts_with("ssd_") || op.name.starts_with("mamba_")) {
      ++mamba_ops;
      EXPECT_TRUE(op.layer == 0 || op.layer == 2) << op.name << " in layer " << op.layer;
    }
    if (op.name == "mamba_conv1d") {
      ++conv1d;
      ASSERT_TRUE(std::holds_alternative<MemoryBoundOp>(op.shape));
      // causal_conv1d_fwd reads and writes x, B, C: (d_inner + 2 G N) / TP channels.
      EXPECT_EQ(std::get<MemoryBoundOp>(op.shape).bytes, 2 * 128 * (256 + 2 * 64) * 4);
    }
    if (op.phase == Phase::kForward && op.name.starts_with("ssd_")) {
      ASSERT_TRUE(std::holds_alternative<GemmOp>(op.shape) ||
                  std::holds_alternative<MemoryBoundOp>(op.shape))
          << op.name;
      forward_flops += op.flops();
    }
  }
  EXPECT_EQ(conv1d, 2 * 4);  // two Mamba layers, four micro-batches
  EXPECT_NEAR(forward_flops, 2 * 4 * per_layer, 1e-6 * forward_flops);
  // Every task is one backend call (the optimizer's multi-kernel ops aside): the Mamba
  // kernels are not skipped.
  EXPECT_GT(mamba_ops, 2 * 4 * 20);
  EXPECT_GE(r.log.size(), r.tasks.size());
}

// Megatron-FSDP optim_grads_params, 4 layers, 2 micro-batches per rank: per micro-batch each
// unit (transformer layer) is gathered before its forward and again before its backward and its
// gradient reduce-scattered once, and the root module (embedding, final norm, output layer)
// gathered once and reduce-scattered once; each collective the whole unit's fp32 bytes.
TEST(ValidationScenarios, Fsdp2GathersTwiceAndReduceScattersOncePerUnit) {
  const Workload w = load_validation("fsdp2.json");
  ASSERT_TRUE(w.training.use_megatron_fsdp);
  const RankRun r = run_rank0(w);
  ASSERT_FALSE(r.log.empty());
  const std::int64_t unit = fsdp_unit_parameters(w) * 4;
  const std::int64_t root = fsdp_root_parameters(w) * 4;
  const std::int64_t mb = 2;
  const std::int64_t layers = 4;
  std::int64_t gathers = 0, gathered = 0, scatters = 0, scattered = 0;
  for (const std::string& entry : r.log) {
    const auto bytes_at = entry.find(" bytes=");
    if (bytes_at == std::string::npos) continue;
    const std::int64_t bytes = std::stoll(entry.substr(bytes_at + 7));
    // Group 2 is the data-parallel group (the executor splits tensor, then data).
    if (entry.starts_with("collective all_gather group=2 ")) {
      ++gathers;
      gathered += bytes;
    } else if (entry.starts_with("collective reduce_scatter group=2 ")) {
      ++scatters;
      scattered += bytes;
    }
    EXPECT_FALSE(entry.starts_with("collective all_reduce") && bytes > 4096)
        << "a gradient all-reduce in an FSDP step: " << entry;
  }
  EXPECT_EQ(gathers, mb * (2 * layers + 1));
  EXPECT_EQ(scatters, mb * (layers + 1));
  // nccl-tests sizes: the gathered buffer, rounded up to the group's elements.
  EXPECT_NEAR(static_cast<double>(gathered), static_cast<double>(mb * (2 * layers * unit + root)),
              64.0 * static_cast<double>(gathers));
  EXPECT_NEAR(static_cast<double>(scattered), static_cast<double>(mb * (layers * unit + root)),
              64.0 * static_cast<double>(scatters));
}

}  // namespace
}  // namespace stepsim::calib
