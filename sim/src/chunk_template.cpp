#include "chunk_template.hpp"

#include <algorithm>
#include <array>

#include "stepsim/core/assert.hpp"

namespace stepsim::sim {

ChunkTemplate time_ops(const std::vector<Op>& ops, const CostModel& cost, bool serial) {
  ChunkTemplate t;
  t.ops.resize(ops.size());
  std::array<double, kStreamCount> stream_end{};  // last end per Stream
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const auto stream = static_cast<std::size_t>(op.stream);
    double start = serial ? t.duration_s : stream_end[stream];
    for (const std::int32_t d : op.deps) {
      STEPSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i);
      start = std::max(start, t.ops[static_cast<std::size_t>(d)].end_s);
    }
    const double duration = cost.op_s(op);
    t.ops[i] = OpTiming{start, start + duration};
    stream_end[stream] = start + duration;
    t.duration_s = std::max(t.duration_s, start + duration);
    const double flops = op.flops();
    t.hardware_flops += flops;
    if (op.phase == Phase::kRecompute) {
      t.recompute_s += duration;
    } else {
      t.model_flops += flops;
    }
    if (op.stream == Stream::kCompute) t.compute_busy_s += duration;
    if (op.workspace_bytes > 0) {
      t.workspace_ops.emplace_back(static_cast<std::int32_t>(i), op.workspace_bytes);
    }
  }
  t.exposed_comm_s = t.duration_s - t.compute_busy_s;
  return t;
}

}  // namespace stepsim::sim
