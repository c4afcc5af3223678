#pragma once
// Timeline: what happened when, per rank and stream, for predicted and measured steps alike.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/ops/ops.hpp"

namespace stepsim::sim {

/// Category of a timeline slice, the colour the viewer draws it in.
enum class SliceKind : std::uint8_t {
  kForward,
  kBackwardInput,
  kBackwardWeight,
  kRecompute,
  kTensorComm,
  kPipelineComm,
  kDataComm,
  kOptimizer,
  kContextComm,  ///< context-parallel exchanges of keys and values ("cp_comm")
  /// A measured collective or P2P call waiting for its last peer to arrive ("wait"), drawn
  /// before the communication itself on the same track; predictions have none (the engine
  /// starts a collective when its last member is ready).
  kWait,
};

std::string_view to_string(SliceKind k);

/// One executed op (or P2P transfer) on one rank's stream.
struct Slice {
  std::int32_t rank = 0;  ///< pipeline rank (representative mode) or global rank
  Stream stream = Stream::kCompute;
  SliceKind kind = SliceKind::kForward;
  double start_s = 0;
  double end_s = 0;
  std::int32_t microbatch = -1;  ///< -1 for per-step work
  std::int32_t chunk = -1;
  std::int32_t layer = -1;
  std::string name;  ///< "F mb3 c1 L12 qkv_gemm"
  std::string op;    ///< "qkv_gemm"
  std::string detail;  ///< shape or bytes, e.g. "m=2048 n=4608 k=12288 bf16"
  /// The phase of the op (forward, recompute, ... step); a transfer of activations is
  /// kForward, of gradients kBackwardInput.
  Phase phase = Phase::kStep;
  bool operator==(const Slice&) const = default;
};

/// What a slice is, independent of how it is named or drawn. Predicted and measured
/// timelines are matched by it (and, for repeats, by occurrence in start order), never by
/// the formatted `name`.
struct SliceIdentity {
  std::int32_t rank = 0;
  Phase phase = Phase::kStep;
  std::int32_t microbatch = -1;
  std::int32_t chunk = -1;
  std::int32_t layer = -1;
  std::string op;  ///< the stable op name: "qkv_gemm", "send_act", "dp_grad_all_reduce"
  auto operator<=>(const SliceIdentity&) const = default;
};

inline SliceIdentity identity_of(const Slice& s) {
  return SliceIdentity{.rank = s.rank, .phase = s.phase, .microbatch = s.microbatch,
                       .chunk = s.chunk, .layer = s.layer, .op = s.op};
}

/// Memory in use on a rank after an event at `time_s`.
struct MemoryPoint {
  double time_s = 0;
  std::int64_t bytes = 0;
  bool operator==(const MemoryPoint&) const = default;
};

/// One task of the engine's critical chain (a forward or backward action, a transfer, a
/// collective or step op): where and when it ran. Traces draw the chain as flow events
/// between the slices of consecutive links.
struct ChainLink {
  std::int32_t rank = 0;  ///< for a transfer: the sending rank
  Stream stream = Stream::kCompute;
  double start_s = 0;
  double end_s = 0;
  bool operator==(const ChainLink&) const = default;
};

/// Why a rank's compute stream is idle over a stretch of the step (predictions): one of the
/// bubble's parts, as `predict`'s bubble breakdown names them (report.hpp BubbleBreakdown),
/// or communication on the critical path of that rank (not overlapped by its compute).
enum class IdleKind : std::uint8_t {
  kScheduleBubble,  ///< "schedule bubble"
  kStageImbalance,  ///< "stage imbalance"
  kWait,            ///< "wait": for transfers, collectives, other stages' communication
  kExposedComm,     ///< "exposed <stream>": the rank's communication, compute idle
};

std::string_view to_string(IdleKind k);

/// One idle stretch of a rank's compute stream. `stream` is the communication's for
/// kExposedComm (the one that ran longest in the stretch), kCompute for bubble parts.
struct IdleSpan {
  std::int32_t rank = 0;
  IdleKind kind = IdleKind::kWait;
  Stream stream = Stream::kCompute;
  double start_s = 0;
  double end_s = 0;
  bool operator==(const IdleSpan&) const = default;
};

struct Timeline {
  std::string label;  ///< "predicted" | "measured"
  double step_time_s = 0;
  std::int32_t ranks = 0;
  std::vector<Slice> slices;                     ///< sorted by (start, rank, stream)
  std::vector<std::vector<MemoryPoint>> memory;  ///< per rank
  std::int64_t memory_capacity_bytes = 0;
  /// The engine's critical chain, first link to last (predicted timelines; empty for
  /// measured ones, which have no dependency edges).
  std::vector<ChainLink> critical_chain;
  /// The idle stretches of each rank's compute stream (predicted timelines), by (rank,
  /// start); per rank the bubble parts add up to its stage's `bubble_s` and the exposed
  /// stretches to its `exposed_comm_s`. Empty for measured timelines.
  std::vector<IdleSpan> idle;
  bool operator==(const Timeline&) const = default;
};

/// The same timeline with one slice per forward or backward action and stream (spanning its
/// ops: "F mb3 c1", detail "57 ops") instead of one per op; transfers and per-step work stay
/// as they are. For traces of large runs (`predict --trace-level microbatch`).
Timeline microbatch_level(const Timeline& timeline);

/// Keeps only the slices and memory counters of `ranks` (`predict --trace-ranks`); the
/// others' memory curves become empty, their idle stretches dropped. Ranks out of range are ignored. The critical chain
/// stays whole: a trace draws only its steps between slices that are kept.
void keep_ranks(Timeline& timeline, const std::vector<std::int32_t>& ranks);

}  // namespace stepsim::sim
