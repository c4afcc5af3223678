#pragma once
// Pipeline schedules exactly as Megatron-LM orders them
// (megatron/core/pipeline_parallel/schedules.py): the per-rank order of forward/backward
// actions, and the point-to-point calls Megatron issues around them.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::sim {

enum class ScheduleKind : std::uint8_t {
  kOneFOneB,     ///< forward_backward_pipelining_without_interleaving
  kInterleaved,  ///< forward_backward_pipelining_with_interleaving
  kGPipe,        ///< all forwards, then all backwards, both in micro-batch order 0..m-1
                 ///< (torch.distributed.pipelining.ScheduleGPipe); blocking P2P; v = 1
};

struct ScheduleParams {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  std::int32_t pipeline_size = 1;   ///< p
  std::int32_t virtual_size = 1;    ///< v (model chunks per rank); 1 unless interleaved
  std::int32_t microbatches = 1;    ///< m, per pipeline per step
  std::int32_t group_size = 0;      ///< N = microbatch_group_size_per_vp_stage; 0 = p
  bool overlap_p2p_comm = false;    ///< interleaved only: async P2P, waits before use
  /// overlap_moe_expert_parallel_comm: Megatron's combined 1F1B. One more warm-up forward
  /// (get_pp_rank_microbatches; without pipelining combined_1f1b_schedule_for_no_pipelining:
  /// F0, then F(i) with B(i - 1), then the last B), so that every steady-state forward is
  /// independent of the backward it is paired with (the step builder runs each such
  /// forward-backward pair as one combined step).
  bool combined_1f1b = false;
  bool operator==(const ScheduleParams&) const = default;
};

enum class ActionType : std::uint8_t { kForward, kBackward };

struct Action {
  ActionType type = ActionType::kForward;
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;
  bool operator==(const Action&) const = default;
};

/// A tensor crossing a pipeline boundary. Identified by what produced it: activations by
/// (microbatch, producer virtual stage), gradients likewise (the producer is the backward of
/// virtual stage `producer_virtual_stage`, the consumer is the backward of the stage before).
/// Virtual stage of (rank r, chunk c) = c * p + r.
enum class TensorKind : std::uint8_t { kActivation, kGradient };

struct Transfer {
  TensorKind tensor = TensorKind::kActivation;
  bool send = true;  ///< true: this rank sends; false: this rank receives
  std::int32_t microbatch = 0;
  std::int32_t producer_virtual_stage = 0;
  std::int32_t peer = 0;  ///< the other pipeline rank
  bool operator==(const Transfer&) const = default;
};

/// One call of Megatron's p2p_communication (send_forward, send_forward_recv_backward, ...).
/// Blocking calls return when all their transfers completed; non-blocking calls
/// (overlap_p2p_comm) only post them, and the consuming compute waits for its own input.
///
/// A call named "wait" is Megatron's `handle.wait()` on requests posted earlier by
/// non-blocking calls: it has no transfers of its own (it posts nothing), is blocking, and
/// returns when every transfer in its waits has completed. Other calls have no waits.
/// Calls that would carry no transfer at all (Megatron's edge ranks skip the exchange) are
/// left out of the program.
///
/// The call's transfers, then its waits, lie in its RankProgram's `transfers` pool from
/// `first` on (RankProgram::transfers_of, waits_of): a program of hundreds of thousands of
/// calls is a few flat arrays, not a small allocation per call.
struct CommCall {
  /// Megatron's function name, e.g. "send_forward_recv_backward"; always a string literal,
  /// so programs of hundreds of thousands of calls allocate nothing for it.
  std::string_view name;
  std::uint32_t first = 0;          ///< index of its first transfer in RankProgram::transfers
  std::uint8_t transfer_count = 0;  ///< transfers it posts
  std::uint8_t wait_count = 0;      ///< name == "wait": transfers posted earlier, awaited here
  bool blocking = true;
  bool operator==(const CommCall&) const = default;
};

/// What a rank does next: a compute action or a communication call.
struct ProgramItem {
  enum class Kind : std::uint8_t { kCompute, kComm };
  Kind kind = Kind::kCompute;
  Action action;  ///< kind == kCompute
  CommCall comm;  ///< kind == kComm
  bool operator==(const ProgramItem&) const = default;
};

struct RankProgram {
  std::int32_t rank = 0;
  std::vector<Action> actions;    ///< compute actions in execution order
  std::vector<ProgramItem> items; ///< actions interleaved with communication calls
  std::vector<Transfer> transfers;  ///< every call's transfers and waits, in item order
  /// The transfers call `c` (one of `items`) posts.
  std::span<const Transfer> transfers_of(const CommCall& c) const {
    return {transfers.data() + c.first, c.transfer_count};
  }
  /// The transfers call `c` (one of `items`) waits for.
  std::span<const Transfer> waits_of(const CommCall& c) const {
    return {transfers.data() + c.first + c.transfer_count, c.wait_count};
  }
  bool operator==(const RankProgram&) const = default;
};

struct Schedule {
  ScheduleParams params;
  std::vector<RankProgram> ranks;  ///< index = pipeline rank
  bool operator==(const Schedule&) const = default;
};

/// Validates the parameters (Megatron's rules; errors name --pp/--vpp/--microbatches/
/// --group-size or the scenario keys) and builds the schedule.
/// The returned params are resolved: group_size = N actually used (p when 0) for the
/// interleaved schedule; overlap_p2p_comm false unless interleaved (Megatron's arguments.py
/// forces it off without interleaving). Megatron training's deallocate_pipeline_outputs=True
/// is assumed (with overlap, a forward's send is waited right after it is posted).
Result<Schedule> make_schedule(const ScheduleParams& params);

/// Megatron's number of warm-up forward steps for `rank`.
std::int32_t warmup_microbatches(const ScheduleParams& params, std::int32_t rank);

/// "F0c0 F1c0 B0c1 ..." for one rank.
std::string format_actions(const RankProgram& program);

/// The whole program of one rank, items separated by spaces: compute as in format_actions,
/// calls as `name[transfers]` (prefixed `~` when non-blocking), waits as `wait[transfers]`.
/// A transfer reads `sA3.1>2`: s(end)/r(ecv), A(ctivation)/G(radient), micro-batch 3,
/// producer virtual stage 1, `>` to / `<` from peer rank 2.
std::string format_program(const RankProgram& program);

/// The op name of transfer `tr` as seen by the rank that posts it: "send_act", "recv_grad", ...
std::string transfer_op_name(const Transfer& tr);

/// The identity of transfer `tr` on the timeline of `rank` (pipeline rank), in a pipeline of
/// `pipeline_size` ranks: the same for the simulator's slice and the validator's measurement.
SliceIdentity transfer_identity(std::int32_t rank, const Transfer& tr, std::int32_t pipeline_size);

/// "1f1b", "interleaved" or "gpipe".
std::string_view to_string(ScheduleKind kind);

}  // namespace stepsim::sim
