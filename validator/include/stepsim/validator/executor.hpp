#pragma once
// The validator's schedule executor: every rank runs, on a real Backend, exactly the program
// the simulator predicts (sim::make_schedule's RankProgram items, each compute action
// expanded into its chunk's forward/backward ops from decompose(), then gradient reduction
// and the step ops), and times every task with the backend's aligned clock.
//
// Execution model: one host thread per rank issues every task in program order and each
// Backend call blocks until its work is done, so the streams of a rank are serialised, with
// one exception: where the backend can (Backend::async_p2p: the CPU backend with
// MPI_THREAD_MULTIPLE), Megatron's non-blocking point-to-point calls (overlap_p2p_comm) are
// posted and progressed by the backend's own thread while the rank goes on computing, and the
// rank waits for them where Megatron's schedule calls handle.wait(). Predictions compared
// with a measurement must model the same execution: sim::SimulateOptions::serialize_streams,
// and async_p2p as the backend says (validation_simulate_options).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::calib {

/// Megatron's rank layout (core's RankGenerator, order tp-cp-ep-dp-pp) for the sizes the
/// executor runs: tensor-parallel fastest, then data-parallel, then pipeline. With experts,
/// Megatron's second generator over the same ranks gives the expert groups: tp = expert
/// tensor-parallel size, ep, dp = expert data-parallel size, pp (cp = 1).
struct RankLayout {
  std::int32_t tp = 1;
  std::int32_t pp = 1;
  std::int32_t dp = 1;
  std::int32_t ep = 1;   ///< expert_model_parallel_size (1 without experts)
  std::int32_t etp = 1;  ///< expert_tensor_parallel_size, resolved (1 without experts)
  bool moe = false;      ///< the model has MoE layers: the expert groups exist
  std::int32_t cp = 1;   ///< context_parallel_size (between TP and DP in Megatron's order)
  /// Hierarchical CP (cp_comm_type a2a+p2p, both levels > 1): the a2a level's size, runs of
  /// cp_a2a consecutive CP ranks (Megatron's create_hierarchical_groups); the ring runs over
  /// every cp_a2a-th CP rank. 1 otherwise.
  std::int32_t cp_a2a = 1;

  struct Coord {
    std::int32_t pp = 0, dp = 0, tp = 0, cp = 0;
    bool operator==(const Coord&) const = default;
  };

  RankGenerator generator() const {
    return RankGenerator(ParallelSizes{.tp = tp, .cp = cp, .dp = dp, .pp = pp});
  }
  /// Megatron's expert rank generator (parallel_state.py's expert_decoder_rank_generator).
  RankGenerator expert_generator() const {
    return RankGenerator(
        ParallelSizes{.tp = etp, .ep = ep, .dp = world_size() / (pp * ep * etp), .pp = pp});
  }
  std::int32_t world_size() const { return tp * cp * pp * dp; }
  std::int32_t global_rank(std::int32_t pp_idx, std::int32_t dp_idx, std::int32_t tp_idx,
                           std::int32_t cp_idx = 0) const {
    return static_cast<std::int32_t>(generator().rank(
        ParallelCoords{.tp = tp_idx, .cp = cp_idx, .dp = dp_idx, .pp = pp_idx}));
  }
  Coord coord_of(std::int32_t global) const {
    const ParallelCoords c = generator().coords(global);
    return Coord{static_cast<std::int32_t>(c.pp), static_cast<std::int32_t>(c.dp),
                 static_cast<std::int32_t>(c.tp), static_cast<std::int32_t>(c.cp)};
  }
  bool operator==(const RankLayout&) const = default;
};

RankLayout layout_of(const Workload& w);

/// Positions in a ring of `size` that a step of `peer_step` (P2POp::peer_step) sends to and
/// receives from: position + peer_step and position - peer_step modulo `size`, or with
/// peer_step 0 the pair partner both ways (position ^ 1, Transformer Engine's
/// `_tp_id % 2 == 0 ? _next_rank : _prev_rank`).
struct RingPeers {
  std::int32_t send_to = 0;
  std::int32_t recv_from = 0;
  bool operator==(const RingPeers&) const = default;
};
RingPeers ring_peers(std::int32_t position, std::int32_t size, std::int32_t peer_step);

/// What an executed op is, for per-kind comparison.
enum class OpCategory : std::uint8_t {
  kGemm,
  kAttention,
  kMemoryBound,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kP2P,
  kAllToAll,  ///< context parallelism's a2a, the MoE dispatcher's dispatch and combine
};
inline constexpr int kOpCategories = 8;
std::string_view to_string(OpCategory c);

/// One task of a rank's step: a plan op (compute or collective) or one CommCall (one
/// batched point-to-point exchange).
struct ExecTask {
  enum class Kind : std::uint8_t { kOp, kComm };
  Kind kind = Kind::kOp;
  Op op;               ///< kind == kOp
  /// kind == kComm: the transfers of the schedule's call; `peer`s are pipeline ranks.
  std::vector<sim::Transfer> transfers;
  /// kind == kComm: bytes of each transfer, in `transfers` order.
  std::vector<std::int64_t> transfer_bytes;
  /// kind == kComm: the simulator's slice name of each transfer ("send_act mb3 to stage 1").
  std::vector<std::string> transfer_names;
  /// kind == kComm: Megatron posts the call without blocking (overlap_p2p_comm) and, with
  /// build_stage_tasks' `async_p2p`, the executor posts it (Backend::post_p2p) and goes on;
  /// its timing runs from the post to the moment the backend saw its transfers done.
  /// kind == kOp: a DDP bucket's gradient reduction posted (Backend::post_collective) with
  /// `async_grad_reduce`; or, with `async_p2p`, an op posted_when_serial: a step of the
  /// context-parallel ring or of a userbuffers exchange (P2POp: its send and its receive,
  /// transfers 0 and 1) or a userbuffers collective; timed from the post to its completion
  /// likewise.
  bool async = false;
  /// Transfers of earlier tasks of the same list, posted without blocking, that must be done
  /// before this task starts: Megatron's handle.wait() calls (one handle per transfer: with
  /// overlap_p2p_comm Megatron does not batch them), and at the end of the schedule every
  /// such transfer not waited for yet.
  struct Wait {
    std::int32_t task = 0;      ///< index in the list
    std::int32_t transfer = 0;  ///< index in that task's `transfers`; -1: its collective
    bool operator==(const Wait&) const = default;
    auto operator<=>(const Wait&) const = default;
  };
  std::vector<Wait> waits;

  OpCategory category = OpCategory::kGemm;
  Stream stream = Stream::kCompute;
  sim::SliceKind slice_kind = sim::SliceKind::kForward;
  std::int32_t microbatch = -1;
  std::int32_t chunk = -1;
  std::int32_t layer = -1;
  std::string name;     ///< "F mb3 c1 L12 qkv_gemm", as the simulator names slices
  std::string op_name;  ///< "qkv_gemm", or the CommCall's name
  std::string detail;   ///< shape or bytes
  bool operator==(const ExecTask&) const = default;
};

/// The tasks of one step of pipeline rank `stage`, in issue order: the schedule's items
/// (compute actions expanded into the chunk's ops; one task per CommCall that carries
/// transfers, non-blocking ones included: they complete where they are issued, and the
/// program's "wait" calls have nothing left to do), then the gradient reduction of each chunk
/// in chunk order (Megatron's finalize_model_grads), then the step ops. `plan` must be
/// decompose(w), `schedule` the one simulate() used for w. `async_p2p` (Backend::async_p2p): the
/// non-blocking calls are ExecTask::async and the tasks after Megatron's waits carry them;
/// so are the context-parallel ring's steps, each waited for by the ring's next step and by
/// the ops that depend on it (Op::deps).
/// `async_grad_reduce` (Backend::async_collectives) with overlap_grad_reduce: each DDP
/// bucket's reduction is an async task where Megatron issues it (inside or after a backward:
/// sim::grad_sync_launches, the simulator's own), and the first step op waits for them all.
std::vector<ExecTask> build_stage_tasks(const Workload& w, const WorkloadPlan& plan,
                                        const sim::Schedule& schedule, std::int32_t stage,
                                        bool async_p2p = false, bool async_grad_reduce = false);

/// Point-to-point tag of a transfer, equal on sender and receiver:
/// derived from (tensor kind, microbatch, producer virtual stage).
std::int32_t p2p_tag(const sim::Transfer& t, std::int32_t virtual_stages);

/// Start and end of one task of one step on the aligned clock, and the duration the backend
/// reported for the work itself (its own clock: without operand setup, result checks or
/// waiting for peers), seconds.
struct TaskTiming {
  double start_s = 0;
  double end_s = 0;
  double op_s = 0;
  bool operator==(const TaskTiming&) const = default;
};

/// What was measured, as held by rank 0 after the run (other ranks get only their own rank's
/// timings). `steps[k][global_rank][task]`: timings of measured step k.
struct Measurement {
  RankLayout layout;
  /// The backend ran non-blocking P2P calls beside the rank's compute (Backend::async_p2p).
  bool async_p2p = false;
  /// overlap_grad_reduce's bucket reductions ran beside the backward on the backend's
  /// collective thread (Backend::async_collectives, with overlap_grad_reduce).
  bool async_grad_reduce = false;
  /// The backend enqueued every op ahead of its device and timed the kernels there
  /// (Backend::deferred_timing): the tasks' times are the device's.
  bool device_timed = false;
  std::vector<std::vector<ExecTask>> stage_tasks;  ///< per pipeline rank
  std::vector<std::vector<std::vector<TaskTiming>>> steps;
  std::vector<double> step_times_s;  ///< per measured step: last end - first start, all ranks
  /// The reporting rank's own tasks of an unfinished step (partial results after a fault).
  std::vector<TaskTiming> unfinished_step;
  bool complete = false;
  std::string failure;  ///< why the run stopped early; empty when complete
  bool operator==(const Measurement&) const = default;
};

struct ExecutorOptions {
  std::int32_t warmup_steps = 1;  ///< untimed steps before measuring
  std::int32_t steps = 3;         ///< measured steps
  /// Number that messages give the first (warm-up) step: the steps of earlier runs of the
  /// same validation (`validate --rounds`), so that a step is named once in the whole run.
  std::int32_t first_step = 0;
  /// A rank that makes no progress for this long is reported to `on_timeout` (watchdog).
  double timeout_s = 60;
  /// Called once, on the watchdog's thread of the rank that made no progress for
  /// `timeout_s`, with a message naming the rank, the step and the task it waits in (and the
  /// ranks it waits for), and a snapshot of what was measured so far (complete steps at rank
  /// 0; the unfinished step's tasks on this rank), copied under the executor's lock: the
  /// callback shares nothing with the rank's own thread. That thread is normally blocked in
  /// the backend, so stopping the job is the caller's decision: `validate` writes the partial
  /// report and calls MpiSession::abort_all. If the rank was only slow, it goes on meanwhile
  /// (it may finish its task and append the step) and, at its next task, waits for the
  /// callback to return; execute_schedule then returns the message as a runtime error.
  /// Empty: no watchdog runs.
  std::function<void(const std::string& message, const Measurement& partial)> on_timeout;
  /// Called on every rank when it has run all its tasks of a step (warm-up steps included),
  /// with the step's index in this run; for progress reports.
  std::function<void(std::int32_t step)> on_step_done;
  /// Called on every rank just before it issues each task, warm-up steps included (tests
  /// inject faults here: `validate`'s testing flags make a rank hang or exit at its n-th task).
  std::function<void(const ExecTask& task)> before_task;
};

/// Error (key training.world_size) unless `backend` runs as many ranks as `w` needs.
Status check_world_size(const Workload& w, const Backend& backend);

/// Runs warm-up and measured steps of `w` on this rank of `backend` (one process per device,
/// world size = w.training.world_size). Every rank must call it. Errors: world size mismatch,
/// a failing backend call.
Result<Measurement> execute_schedule(const Workload& w, const WorkloadPlan& plan,
                                     const sim::Schedule& schedule, Backend& backend,
                                     const ExecutorOptions& options);

/// Index of the measured step whose time is the median (lower median).
std::size_t median_step(const Measurement& m);

/// Appends the measured steps of `later` (a later run of the same schedule on the same
/// ranks: `validate --rounds`) to `m`; `m` takes `later`'s unfinished step, completion and
/// failure. An empty `m` (no layout yet) becomes `later`.
void append_steps(Measurement& m, Measurement later);

/// When each task of measured step `step` could start its work, per pipeline stage, for the
/// stage's representative rank (data-, context- and tensor-parallel rank 0), on the aligned
/// clock: a collective when the last member of its group had called it (members found in
/// Megatron's rank layout; a group that spans stages, the tied embeddings' or the gradient
/// norm's, by the same call's turn among the calls of that name on the member's stage); a
/// batched P2P call when the last peer had posted its side of each transfer; any other task
/// at its own start. Never before the task's start nor after its end (clock alignment).
std::vector<std::vector<double>> peers_ready(const Measurement& m, std::size_t step);

/// The measured step `step` as a timeline in the simulator's representative mode: one rank
/// per pipeline stage (data- and tensor-parallel rank 0), times relative to the step's start.
/// A collective or P2P call that waited for a peer (peers_ready) is drawn as a "wait" slice
/// (sim::SliceKind::kWait, on its own track) up to the moment the last peer arrived, then as
/// the communication itself, as the simulator draws it.
sim::Timeline measured_timeline(const Measurement& m, std::size_t step);

}  // namespace stepsim::calib
