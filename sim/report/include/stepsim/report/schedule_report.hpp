#pragma once
// `stepsim schedule` as a library call: a schedule asked for by its command-line knobs
// (checked as the command checks them), and its JSON contract (docs/outputs.md).

#include <cstdint>
#include <ostream>

#include "stepsim/base/result.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim {

/// The knobs of `stepsim schedule` (and of the Python module's stepsim.schedule()).
struct ScheduleRequest {
  std::int32_t pp = 1;            ///< pipeline_model_parallel_size
  std::int32_t vpp = 1;           ///< virtual_pipeline_model_parallel_size
  std::int32_t microbatches = 1;  ///< micro-batches per pipeline per step
  std::int32_t group_size = 0;    ///< microbatch_group_size_per_vp_stage, when given
  bool group_size_given = false;
  bool gpipe = false;
  bool overlap_p2p = false;  ///< overlap_p2p_comm (interleaved only)
};

/// 1F1B without vpp, interleaved 1F1B with vpp > 1, GPipe when asked. Errors: a size beyond
/// stepsim's bounds (pp <= 2^14, microbatches x vpp <= 2^20, <= 2^22 steps), a knob that
/// does not apply to the schedule asked for, and make_schedule()'s rules.
Result<Schedule> make_requested_schedule(const ScheduleRequest& request);

/// {"params": {...}, "ranks": [{"rank", "warmup", "ops": [["F", mb, chunk], ...], "comm"}]}.
void write_schedule_json(std::ostream& out, const Schedule& schedule);

}  // namespace stepsim::sim
