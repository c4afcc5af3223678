#pragma once
// The one vocabulary of timelines: how an op or a transfer is named, described and coloured,
// for predicted and measured steps alike. The simulator's timeline (step_timeline.cpp) and
// the validator's executor both call these, so a trace reads the same whichever wrote it.
// Names are for people; predicted and measured slices are matched by SliceIdentity.

#include <cstdint>
#include <string>

#include "stepsim/ops/ops.hpp"
#include "stepsim/schedule/schedule.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::sim {

/// The slice kind (trace `cat`) of `op`: its stream's for communication streams; on the
/// compute stream its phase's, except collectives (tp_comm for the tensor group, dp_comm for
/// the others).
SliceKind slice_kind_of(const Op& op);

/// "m=2048 n=4608 k=12288 bf16", "all_reduce tp x8 96.0 MiB", "1.5 MiB inter-node", ...
std::string describe_shape(const OpShape& shape);

/// The slice name of `op`: inside a forward or backward action of micro-batch `microbatch`
/// and model chunk `chunk`, "F mb3 c1 L12 qkv_gemm" (recompute, dgrad and wgrad ops all
/// under "B"); per-step work (microbatch -1) "c0 b1 dp_grad_reduce_scatter" with the chunk
/// and DDP bucket when they are >= 0, else the op's name alone.
std::string op_slice_name(const Op& op, std::int32_t microbatch, std::int32_t chunk,
                          std::int32_t bucket = -1);

/// "send_act mb3 to stage 1", "recv_grad mb0 from stage 2": transfer `tr` as the rank that
/// posts it sees it (Transfer::send, Transfer::peer).
std::string transfer_slice_name(const Transfer& tr);

}  // namespace stepsim::sim
