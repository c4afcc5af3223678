#pragma once
// The step builder behind build_step() (build_step.hpp): turns the plan's op templates, the
// schedule's per-rank programs and the cost model into one step's TaskGraph. Its work is in
// two files: build_step.cpp (the templates, the programs' actions and P2P transfers, the host
// lane) and build_step_work.cpp (Megatron's DDP buckets, the parameter all-gather and the
// step's gradient and optimizer work).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "stepsim/graph/build_step.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/graph/ddp_buckets.hpp"
#include "cuda_graph_issue.hpp"

namespace stepsim::sim {

class StepBuilder {
 public:
  static constexpr std::int32_t kNoTask = -1;
  static constexpr std::size_t kNoKey = static_cast<std::size_t>(-1);

  StepBuilder(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
              const CostModel& cost, const BuildOptions& options)
      : w_(w), plan_(plan), schedule_(schedule), cost_(cost), options_(options) {
    p_ = schedule.params.pipeline_size;
    v_ = schedule.params.virtual_size;
    m_ = schedule.params.microbatches;
    out_.chunks_per_rank = v_;
    const auto keys = static_cast<std::size_t>(2 * p_ * v_ * m_);
    transfer_of_key_.assign(keys, kNoTask);
    posts_.assign(static_cast<std::size_t>(p_), 0);
    backward_tasks_.resize(static_cast<std::size_t>(p_));
    last_backward_preds_.resize(static_cast<std::size_t>(p_ * v_));
    last_backward_key_.assign(static_cast<std::size_t>(p_ * v_), kNoKey);
    dp_stream_last_.assign(static_cast<std::size_t>(p_), kNoTask);
    replica_variance_.assign(static_cast<std::size_t>(p_), 0.0);
    out_.replica_variance_s2.assign(static_cast<std::size_t>(p_), 0.0);
    out_.compute_busy_s.assign(static_cast<std::size_t>(p_), 0.0);
    host_ = options.serialize_streams ? nullptr : cost.host();
    host_last_.assign(static_cast<std::size_t>(p_), kNoTask);
    grad_launches_.resize(static_cast<std::size_t>(p_));
    grad_launch_issued_.resize(static_cast<std::size_t>(p_));
  }

  Result<BuiltStep> build();

 private:
  void build_templates();

  // Sizes known up front: growing these vectors by doubling would copy and page-fault them
  // several times over on large pipelines.
  void reserve_for_schedule();

  /// What every transfer across one pipeline boundary shares, costed once per boundary
  /// rather than once per micro-batch.
  struct Boundary {
    std::int64_t bytes = 0;
    bool inter_node = false;
    double duration_s = 0;
  };

  void cost_boundaries();

  const Boundary& boundary(TensorKind tensor, std::int32_t producer) const {
    return boundaries_[static_cast<std::size_t>(2 * producer +
                                                (tensor == TensorKind::kActivation ? 0 : 1))];
  }

  std::size_t key_of(TensorKind tensor, std::int32_t microbatch, std::int32_t producer) const {
    return static_cast<std::size_t>(
        ((static_cast<std::int32_t>(tensor) * p_ * v_) + producer) * m_ + microbatch);
  }

  const ChunkPlan& chunk_at(std::int32_t virtual_stage) const {
    return plan_.stages[static_cast<std::size_t>(virtual_stage % p_)]
        .chunks[static_cast<std::size_t>(virtual_stage / p_)];
  }

  TaskId add(const Task& task) { return out_.graph.add_task(task); }

  double scale_of(std::int32_t r) const {
    const auto ri = static_cast<std::size_t>(r);
    return ri < options_.compute_scale.size() ? options_.compute_scale[ri] : 1.0;
  }

  void add_program(const RankProgram& program, std::vector<std::int32_t>& end_of_program);

  /// overlap_moe_expert_parallel_comm without pipelining: the combined step of a forward and
  /// the previous micro-batch's backward (combined_1f1b_schedule_for_no_pipelining), timed
  /// as one merged op list (ep_overlap.hpp) and added as two tasks that start together, each
  /// ending with its own last op. Only the forward's task holds the GPU's SMs in the engine
  /// (the pair's kernels are on one compute stream, already serialised in the template).
  bool pairs_combined() const { return schedule_.params.combined_1f1b && p_ == 1 && v_ == 1; }
  void build_pair_templates(const CostModel& cost);

  // The host issuing `kernels` launches at `per_kernel` seconds each on rank `r`, after what
  // it issued before: returns the task that ends when the first launch is issued (what the
  // GPU work waits for), and leaves the host busy until the last one. kNoTask without host
  // costs (no measured host, or the validator's serialised executor).
  std::int32_t issue_on_host(std::int32_t r, std::size_t kernels, double per_kernel);
  /// The host's issue of action `a` (template `ti`) on rank `r`: its kernels one by one, or
  /// under CUDA graphs (training.cuda_graph_impl) the captured parts as graph replays
  /// (cuda_graph_issue.hpp) or, with "full_iteration", one replay of the whole
  /// forward-backward at the rank's first action and nothing after.
  std::int32_t issue_action(std::int32_t r, const Action& a, std::int32_t ti);
  /// As issue_on_host with the first launch's and the rest's host seconds given.
  std::int32_t issue_costs(std::int32_t r, double first_s, double rest_s);
  /// Under full_iteration CUDA graphs the forward-backward's host calls are in the graph.
  bool full_iteration_graph() const {
    return w_.training.cuda_graph_impl == CudaGraphImpl::kFullIteration;
  }
  /// The host's launches of the gradient reductions that the rank's `backward`-th backward
  /// action makes ready (overlap_grad_reduce), after that action's kernels.
  void issue_grad_launches(std::int32_t r, std::int32_t backward);

  // The combined step's templates (pairs_combined), -1 without; set while adding a pair.
  std::int32_t paired_forward_template_ = -1;
  std::int32_t paired_backward_template_ = -1;
  std::int32_t pair_template_ = -1;    // add_action's template while adding a pair
  bool pair_backward_ = false;         // add_action adds the pair's backward
  std::int32_t last_issued_ = kNoTask;  // issue_action's answer for the last action

  bool defers_next_wgrad() const {
    const std::int64_t limit = w_.training.wgrad_deferral_limit;
    return limit == 0 || deferred_ < limit;
  }

  /// finish_embedding_wgrad_compute (schedules.py) at the end of the last stage's program,
  /// before finalize_model_grads: drain_embedding_wgrad_compute (megatron/core/utils.py)
  /// all-gathers the first deferred input synchronously, then for each deferred micro-batch
  /// i issues the all-gather of input i + 1 (NCCL's stream waits for the compute issued
  /// before it: wgrad i - 1) and runs wgrad i (after gather i); the last wgrad after.
  void add_wgrad_drain(std::int32_t r, std::vector<std::int32_t>& cursor);

  /// Where one rank gathers its parameters with overlap_param_gather (Megatron's
  /// distributed optimizer; the gather of this step's parameters happens in the next step's
  /// forward, so a simulated steady-state step starts with it).
  struct ParamGather {
    bool on = false;
    /// align_param_gather with interleaving: the schedule dispatches the gathers (Megatron's
    /// param_sync_func); otherwise each chunk's forward pre-hook does.
    bool aligned = false;
    const Op* op = nullptr;  ///< the stage's dp_param_all_gather step op (all its chunks)
    /// Per forward action of the rank (in program order): the chunk whose gather Megatron
    /// dispatches before it (align_param_gather, interleaved), or -1.
    std::vector<std::int32_t> dispatch_at;
    std::vector<std::size_t> first_forward;  ///< per chunk: index of its first forward
    std::vector<std::int32_t> done;          ///< per chunk: the task the forward waits for
  };

  const Op* param_gather_op(std::int32_t r) const;

  bool param_gather_overlapped(std::int32_t r) const;

  ParamGather plan_param_gather(const RankProgram& program);

  /// What add_program carries from item to item of one rank's program.
  struct ProgramState {
    /// The tasks the rank's next item waits for: the last compute, or every transfer of the
    /// last blocking call, plus the transfers of Megatron's handle.wait() calls.
    std::vector<std::int32_t> cursor;
    ParamGather gather;
    std::int32_t forward_index = 0;  ///< forward actions of the rank so far
    bool record_preds = false;       ///< keep the last backward's predecessors (bucket_ready)
  };

  /// A forward or backward action of rank `r`: its task, after the host's launches, the
  /// parameter gathers it waits for and the data it needs.
  void add_action(std::int32_t r, const Action& a, ProgramState& st);
  /// A P2P call of `program`: the waits it names, its transfers, and the host's
  /// synchronisation after a blocking one.
  void add_call(const RankProgram& program, const CommCall& call,
                std::vector<std::int32_t>& cursor);

  // Dispatches chunk `c`'s parameter all-gathers (once) after `cursor`, one per DDP bucket
  // on the rank's DP stream, and returns the task that chunk's first forward waits for.
  // Interleaved (align_param_gather): every bucket is dispatched at once in bucket order
  // (the one nearest the output first), so the first module waits for all of them: the
  // last. Without interleaving (align_param_gather is off): the forward pre-hook of the
  // first module dispatches the bucket it needs and waits; each wait dispatches the next
  // bucket in forward order, so the gathers run back to back while the forward computes;
  // each module waits for its own bucket. The forward then starts `max_j(end_j - use_j)`
  // after the dispatch, with end_j the j-th gather's end and use_j the offset into the
  // forward of the first op using bucket j (a delay task, exact with fixed durations).
  /// One all-gather of chunk `c` (bucket `bucket`, -1: the whole chunk) on rank `r`'s DP
  /// stream: after `cursor` and the rank's previous DP-stream task, launched from the host.
  TaskId enqueue_gather(std::int32_t r, std::int32_t c, const Op& op, std::int32_t bucket,
                        const std::vector<std::int32_t>& cursor);
  std::int32_t dispatch_param_gather(std::int32_t r, std::int32_t c,
                                     const std::vector<std::int32_t>& cursor, ParamGather& g);

  const std::vector<DdpBucket>& buckets_of(std::int32_t r, std::int32_t c) {
    const auto slot = static_cast<std::size_t>(r * v_ + c);
    return buckets_[slot];
  }

  void add_edges(const std::vector<std::int32_t>& from, TaskId to) {
    for (const std::int32_t f : from)
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(f)}, to);
  }

  // One task per transfer: it starts once both its sender and its receiver have posted it
  // (NCCL's send and receive complete together) and both ranks' later work may wait on it.
  std::int32_t post_transfer(std::int32_t r, const Transfer& tr,
                             const std::vector<std::int32_t>& cursor);

  // A compute waits for the transfer that brings its input. After a blocking receive that
  // transfer is already in the cursor, and a second edge would only cost the engine time.
  void add_data_dependency(TaskId compute, std::size_t key,
                           const std::vector<std::int32_t>& cursor) {
    const std::int32_t t = transfer_of_key_[key];
    if (t != kNoTask && std::find(cursor.begin(), cursor.end(), t) != cursor.end()) return;
    data_deps_.push_back({compute, key});
  }

  Status add_data_dependencies();

  /// `own_stream`: on the op's stream even with serialised streams (async_grad_reduce).
  /// `wait_s`: added to its time, the expected wait for its group's slowest member.
  TaskId add_op_task(std::int32_t r, std::int32_t chunk, const Op& op, std::int32_t bucket,
                     bool own_stream = false, double wait_s = 0);
  /// The expected wait at rank `r`'s first gradient reduction for the slowest of the
  /// replicas it reduces with (`op`'s group; stepsim/cost/spread.hpp); clears what it used.
  double replica_wait(std::int32_t r, const Op& op);

  /// overlap_grad_reduce's reductions run beside the backward (not with serialised streams,
  /// unless the executor compared with runs them so: async_grad_reduce).
  bool grad_reduce_overlapped() const {
    return w_.training.overlap_grad_reduce &&
           (!options_.serialize_streams || options_.async_grad_reduce);
  }

  // A P2P transfer moves its bytes out of the sender's NIC rail (across nodes) or NVLink
  // port and into the receiver's. NCCL's send/receive kernels take one or two CTAs: no
  // interference with compute is modelled for them.
  // Written into `out` (a task's, filled in place).
  static void set_transfer_resources(TaskResources& out, std::int32_t sender, std::int32_t receiver,
                                     bool inter_node);

  // A collective's ring sends and receives on every member: both directions of the rank's NIC
  // rail when its group spans nodes, of its NVLink port otherwise; as an NCCL kernel it
  // interferes with the compute on its GPU (unless it is not NCCL's: CollectiveOp::nccl).
  static TaskResources collective_resources(std::int32_t r, const CollectiveOp& op);

  // Megatron's gradient reduction (the DDP of each model chunk, bucketed as in
  // ddp_buckets.hpp), dispatched where Megatron dispatches it:
  // - without overlap_grad_reduce: every bucket synchronously in finalize_model_grads, chunk
  //   by chunk, after the rank's whole program;
  // - with it, interleaved (align_grad_reduce, Megatron's default): a chunk's buckets all at
  //   once after the backward whose virtual micro-batch id is the chunk's last one plus the
  //   pipeline rank (schedules.py, backward_step_helper_postprocess), so that every pipeline
  //   rank launches together; chunks never reached that way after the program;
  // - with it, without interleaving: the first pipeline rank's buckets each as soon as the
  //   last backward has made its gradients final (the backward hooks, grad sync enabled for
  //   the last micro-batch); later ranks after their program ("launch any remaining grad
  //   reductions"), since align_grad_reduce keeps their hooks from dispatching.
  // The reductions share the rank's DP stream in dispatch order.
  Status make_buckets();

  Status add_step_work(std::int32_t r, std::int32_t end_of_program);

  // The moment a bucket's gradients become final inside chunk `c`'s last backward: a delay
  // task that starts with that backward (same predecessors) and lasts until the end of the
  // bucket's ready op in the backward's template.
  std::int32_t bucket_ready(std::int32_t r, std::int32_t c, const DdpBucket& bucket);

  // `op` (a gradient collective over the whole chunk) for bucket `b` alone: its bytes in
  // proportion to the bucket's parameters; the last bucket takes the rounding remainder.
  const Op& bucket_op(const Op& op, std::int64_t parameters, const std::vector<DdpBucket>& buckets,
                      std::size_t b);

  // The tied-embedding gradient all-reduce is one collective over the first and last stage:
  // a rendezvous of their two tasks.
  Status match_embedding_group();

  // Each grad-stats all-reduce of the optimizer (the gradient norm; fp16's found-inf flag) is
  // one collective over every pipeline stage (the world, or the model-parallel group): a
  // rendezvous of the stages' tasks, so that every stage's optimizer waits for the slowest.
  Status match_grad_stats_group();

  const Workload& w_;
  const WorkloadPlan& plan_;
  const Schedule& schedule_;
  const CostModel& cost_;
  BuildOptions options_;
  std::int32_t p_ = 1, v_ = 1, m_ = 1;
  BuiltStep out_;
  std::vector<std::int32_t> transfer_of_key_;
  std::vector<std::int32_t> posted_;  // scratch: the transfers of the call being added
  std::vector<std::int64_t> posts_;   // per rank: transfers posted so far
  std::vector<Boundary> boundaries_;  // [2 * producer virtual stage + (0 act, 1 grad)]  // one task
                                      // per (tensor, microbatch, producer)
  std::vector<std::pair<TaskId, std::size_t>> data_deps_;
  std::vector<TaskId> embedding_tasks_;
  std::vector<std::vector<TaskId>> grad_stats_tasks_;      // [k-th grad-stats all-reduce][stage]
  std::vector<std::vector<std::int32_t>> backward_tasks_;  // per rank, in program order
  // [rank * v + chunk]: the predecessors of the chunk's latest backward (recorded only where
  // bucket_ready needs them) and the gradient it receives (kNoKey: none).
  std::vector<std::vector<std::int32_t>> last_backward_preds_;
  std::vector<std::size_t> last_backward_key_;
  std::vector<std::vector<DdpBucket>> buckets_;  // [rank * v + chunk]
  std::vector<std::int32_t> dp_stream_last_;     // per rank: the last task on its DP stream
  // Per rank: the variance (s^2) of its compute time between data-parallel replicas since
  // their last synchronisation (ChunkTemplate::spread_variance_s2 of its actions so far);
  // the first gradient reduction waits for the slowest replica and clears it.
  std::vector<double> replica_variance_;
  // The host (CostModel::host(); null: not modelled): per rank, the task that ends when the
  // host has issued everything so far.
  const HostCosts* host_ = nullptr;
  /// Per template: its host issue under per-layer CUDA graphs, computed on first use.
  std::vector<GraphIssue> graph_issue_;
  std::vector<bool> graph_issue_known_;
  std::vector<bool> graph_replayed_;  ///< per rank: full_iteration's replay issued
  std::vector<std::int32_t> host_last_;
  // Per rank: its gradient reductions in Megatron's issue order (grad_sync_launches, made
  // once in add_program) and, with a host, the host task that launches the first collective
  // of each (the launch's others follow it one task each); kNoTask: launched after the
  // program (add_step_work), or no host.
  std::vector<std::vector<GradSyncLaunch>> grad_launches_;
  std::vector<std::vector<std::int32_t>> grad_launch_issued_;
  std::int32_t deferred_template_ = -1;  // the last stage's backward with the wgrad deferred
  std::int64_t deferred_ = 0;            // backwards whose output-layer wgrad was deferred
};

}  // namespace stepsim::sim
