#include "stepsim/simulate/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "stepsim/graph/build_full_rank.hpp"
#include "stepsim/graph/build_step.hpp"
#include "stepsim/simulate/heterogeneity.hpp"
#include "stepsim/engine/intervals.hpp"
#include "critical_chain.hpp"
#include "idle_spans.hpp"
#include "step_memory.hpp"
#include "step_timeline.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/engine/engine.hpp"

namespace stepsim::sim {

namespace {

/// Per-rank accounting of where the step's time went.
struct RankTime {
  double compute_s = 0;       // compute kernels inside actions
  double exposed_tp_s = 0;    // inside actions, compute waiting for TP collectives
  double optimizer_s = 0;     // per-step compute ops
  double p2p_exposed_s = 0;   // transfers while not computing
  double dp_exposed_s = 0;    // other collectives while neither computing nor transferring
};

std::vector<RankTime> account_ranks(const BuiltStep& step, const EngineResult& run,
                                    std::int32_t ranks) {
  std::vector<RankTime> out(static_cast<std::size_t>(ranks));
  std::vector<std::vector<Interval>> compute(out.size()), transfer(out.size()), coll(out.size());
  const auto& tasks = step.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    const TaskTiming& when = run.timings[i];
    const auto r = static_cast<std::size_t>(task.rank);
    RankTime& rt = out[r];
    const Interval span{when.start_s, when.end_s};
    switch (task.kind) {
      case TaskKind::kCompute: {
        const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
        const ChunkTemplate& t = step.templates[static_cast<std::size_t>(ref.template_index)];
        // An action slowed by a collective beside it stretches as a whole.
        const double stretch = when.stretch(t.duration_s);
        rt.compute_s += t.compute_busy_s * stretch;
        rt.exposed_tp_s += t.exposed_comm_s * stretch;
        compute[r].push_back(span);
        break;
      }
      case TaskKind::kStepOp: {
        // The deferred output-layer wgrads of the drain are backward compute, not optimizer.
        const StepOpRef& ref = step.step_ops[static_cast<std::size_t>(task.payload)];
        (ref.op->phase == Phase::kStep ? rt.optimizer_s : rt.compute_s) +=
            task.duration_s * when.stretch(task.duration_s);
        compute[r].push_back(span);
        break;
      }
      case TaskKind::kTransfer: {
        // One task for both ranks: the receiver waits for it as much as the sender.
        const TransferRef& ref = step.transfers[static_cast<std::size_t>(task.payload)];
        const auto receiver = static_cast<std::size_t>(ref.receiver);
        transfer[r].push_back(span);
        transfer[receiver].push_back(span);
        break;
      }
      case TaskKind::kCollective: coll[r].push_back(span); break;
      case TaskKind::kJoin:
      case TaskKind::kDelay:
      case TaskKind::kHost:
        break;
    }
  }
  for (std::size_t r = 0; r < out.size(); ++r) {
    merge_intervals(compute[r]);
    merge_intervals(transfer[r]);
    merge_intervals(coll[r]);
    out[r].p2p_exposed_s = measure_minus(transfer[r], compute[r]);
    out[r].dp_exposed_s = measure_minus(coll[r], union_of(compute[r], transfer[r]));
  }
  return out;
}

/// The lane of `full` that holds the GPU whose work ended last, as a representative step's
/// engine result: its tasks' timings, predecessors renamed into the lane.
EngineResult project_lane(const FullRankStep& full, const EngineResult& run, std::int64_t lane) {
  const std::uint32_t n = full.lane_tasks;
  EngineResult out;
  out.makespan_s = run.makespan_s;
  const auto first = static_cast<std::size_t>(lane) * n;
  out.timings.assign(run.timings.begin() + static_cast<std::ptrdiff_t>(first),
                     run.timings.begin() + static_cast<std::ptrdiff_t>(first + n));
  for (TaskTiming& t : out.timings) {
    if (t.critical_pred != TaskTiming::kNone) t.critical_pred %= n;
    out.contended_tasks += t.contended ? 1 : 0;
  }
  out.last_task = run.last_task == TaskTiming::kNone ? TaskTiming::kNone : run.last_task % n;
  return out;
}

/// The step's schedule: the caller's, else made from the scenario (GPipe when asked).
Result<std::shared_ptr<const Schedule>> schedule_of(const Workload& w,
                                                    const SimulateOptions& options) {
  ScheduleParams params = schedule_params_of(w);
  if (options.gpipe) {
    if (params.virtual_size != 1) {
      return Error{w.source_file, "training.virtual_pipeline_model_parallel_size",
                   "=" + std::to_string(params.virtual_size) +
                       ": the GPipe schedule has no virtual stages"};
    }
    params.kind = ScheduleKind::kGPipe;
  }
  std::shared_ptr<const Schedule> schedule = options.schedule;
  if (schedule == nullptr) {
    Result<Schedule> made = make_schedule(params);
    if (!made.ok()) return made.errors();
    schedule = std::make_shared<const Schedule>(std::move(made).value());
  }
  STEPSIM_ASSERT(schedule->params.pipeline_size == params.pipeline_size &&
                 schedule->params.virtual_size == params.virtual_size &&
                 schedule->params.microbatches == params.microbatches &&
                 schedule->params.kind == params.kind);
  return schedule;
}

/// What compute and NCCL kernels cost each other: measured on the calibrated machine where
/// the profile says, else the system file's cited coefficients.
Interference interference_of(const Workload& w, const CostModel& cost) {
  if (const MeasuredInterference* m = cost.interference()) {
    return Interference{.compute_slowdown = m->compute_slowdown,
                        .collective_slowdown = m->collective_slowdown,
                        .p2p_post_latency_s = m->p2p_post_latency_s,
                        .collective_post_latency_s = m->collective_post_latency_s};
  }
  return w.system.interference;
}

/// The step as built and run: one representative rank per stage, or every GPU (full rank),
/// whose `lane` (one pipeline: fixed tp, cp, dp) holding the GPU whose work ended last
/// stands for the step.
struct StepRun {
  std::optional<BuiltStep> representative;
  std::unique_ptr<FullRankStep> full;
  EngineResult full_run, lane_run;
  std::int64_t lane = 0;

  /// The build whose stages the summaries, memory and timeline are read off.
  const BuiltStep& step() const {
    return full ? full->builds[static_cast<std::size_t>(
                      full->build_of_lane[static_cast<std::size_t>(lane)])]
                : *representative;
  }
};

/// One representative rank per stage; stragglers scale their stages' compute.
Result<StepRun> run_representative(const Workload& w, const WorkloadPlan& plan,
                                   const Schedule& schedule, const CostModel& cost,
                                   const SimulateOptions& options, BuildOptions build_options,
                                   const EngineOptions& engine_options) {
  if (!options.slow_nics.empty() || options.jitter_sigma != 0) {
    return Error{"", options.slow_nics.empty() ? "--jitter" : "--slow-nic",
                 ": per-GPU heterogeneity needs every GPU simulated: add --full-rank"};
  }
  if (!options.stragglers.empty()) {
    Result<std::vector<double>> scale = straggler_scale(w, options.stragglers);
    if (!scale.ok()) return scale.errors();
    build_options.compute_scale = std::move(scale).value();
  }
  Result<BuiltStep> built = build_step(w, plan, schedule, cost, build_options);
  if (!built.ok()) return built.errors();
  StepRun out;
  out.representative.emplace(std::move(built).value());
  Result<EngineResult> ran = run_engine(out.representative->graph, engine_options);
  if (!ran.ok()) return ran.errors();
  out.lane_run = std::move(ran).value();
  return out;
}

/// Every GPU, each with its compute scale and NIC capacity; the lane that ended last is
/// projected out as the step's.
Result<StepRun> run_full_rank(const Workload& w, const WorkloadPlan& plan,
                              const Schedule& schedule, const CostModel& cost,
                              const SimulateOptions& options, BuildOptions build_options,
                              EngineOptions engine_options) {
  Result<std::vector<double>> scale = gpu_compute_scales(w, options);
  if (!scale.ok()) return scale.errors();
  if (cost.spread() != nullptr) {
    // Each replica's deviation drawn, not its expected slowest: the representative build
    // says how far apart (per stage, relative to its compute) the replicas arrive.
    Result<BuiltStep> representative = build_step(w, plan, schedule, cost, build_options);
    if (!representative.ok()) return representative.errors();
    std::vector<double> relative_sd;
    for (std::size_t s = 0; s < representative->compute_busy_s.size(); ++s) {
      const double busy = representative->compute_busy_s[s];
      relative_sd.push_back(busy > 0 ? std::sqrt(representative->replica_variance_s2[s]) / busy
                                     : 0.0);
    }
    apply_replica_draws(w, relative_sd, options.seed, scale.value());
    build_options.replica_waits = false;
  }
  Result<std::vector<double>> nic = nic_capacities(w, options);
  if (!nic.ok()) return nic.errors();
  Result<std::unique_ptr<FullRankStep>> made =
      build_full_rank(w, plan, schedule, cost, build_options, *scale);
  if (!made.ok()) return made.errors();
  StepRun out;
  out.full = std::move(made).value();
  engine_options.nic_capacity = std::move(nic).value();
  Result<EngineResult> ran = run_engine(out.full->step.graph, engine_options);
  if (!ran.ok()) return ran.errors();
  out.full_run = std::move(ran).value();
  if (out.full_run.last_task != TaskTiming::kNone) {
    out.lane = out.full->lane_of_rank[static_cast<std::size_t>(
        out.full->step.graph.tasks()[out.full_run.last_task].rank)];
  }
  out.lane_run = project_lane(*out.full, out.full_run, out.lane);
  return out;
}

/// The step built into a task graph and run through the engine.
Result<StepRun> run_step(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
                         const CostModel& cost, const SimulateOptions& options) {
  const Interference interference = interference_of(w, cost);
  const BuildOptions build_options{
      .serialize_streams = options.serialize_streams,
      .async_p2p = options.async_p2p,
      .async_grad_reduce = options.async_grad_reduce,
      .compute_scale = {},
      .interference = options.contention ? interference : Interference{}};
  const EngineOptions engine_options{
      .contention = options.contention, .interference = interference, .nic_capacity = {}};
  if (!options.full_rank) {
    return run_representative(w, plan, schedule, cost, options, build_options, engine_options);
  }
  return run_full_rank(w, plan, schedule, cost, options, build_options, engine_options);
}

/// Each stage's busy, exposed-communication and bubble time and peak memory; the bubble
/// fraction, the peak and whether it fits.
void summarise_stages(const Workload& w, const std::vector<RankTime>& times,
                      const StepMemory& memory, Prediction& pred) {
  double busy_total = 0, bubble_total = 0;
  const auto ranks = static_cast<std::int32_t>(times.size());
  for (std::int32_t r = 0; r < ranks; ++r) {
    const RankTime& rt = times[static_cast<std::size_t>(r)];
    StageSummary s;
    s.stage = r;
    s.busy_s = rt.compute_s + rt.optimizer_s;
    s.optimizer_s = rt.optimizer_s;
    s.exposed_comm_s = rt.exposed_tp_s + rt.p2p_exposed_s + rt.dp_exposed_s;
    s.bubble_s = std::max(0.0, pred.step_time_s - s.busy_s - s.exposed_comm_s);
    s.peak_memory_bytes = memory.peak_bytes[static_cast<std::size_t>(r)];
    busy_total += s.busy_s;
    bubble_total += s.bubble_s;
    pred.peak_memory_bytes = std::max(pred.peak_memory_bytes, s.peak_memory_bytes);
    pred.stages.push_back(s);
  }
  pred.bubble_fraction = busy_total > 0 ? bubble_total / busy_total : 0.0;
  pred.fits_in_memory = pred.peak_memory_bytes <= w.system.memory_bytes;
}

/// The time of the stage that finished last, by kind.
CriticalPath critical_path_of(const BuiltStep& step, const EngineResult& run,
                              const std::vector<RankTime>& times, double step_time_s) {
  const std::int32_t critical =
      run.last_task == TaskTiming::kNone ? 0 : step.graph.tasks()[run.last_task].rank;
  const RankTime& ct = times[static_cast<std::size_t>(critical)];
  CriticalPath cp;
  cp.rank = critical;
  cp.compute_s = ct.compute_s;
  cp.tp_comm_s = ct.exposed_tp_s;
  cp.p2p_s = ct.p2p_exposed_s;
  cp.dp_comm_s = ct.dp_exposed_s;
  cp.optimizer_s = ct.optimizer_s;
  cp.bubble_s = std::max(0.0, step_time_s - cp.compute_s - cp.tp_comm_s - cp.p2p_s -
                                  cp.dp_comm_s - cp.optimizer_s);
  return cp;
}

/// The representative ranks' FLOPs and ops stamped.
struct StepWork {
  double model_flops = 0, hardware_flops = 0;
  std::int64_t tasks = 0;
};

StepWork step_work(const BuiltStep& step) {
  StepWork out;
  for (const ActionRef& a : step.actions) {
    const ChunkTemplate& t = step.templates[static_cast<std::size_t>(a.template_index)];
    out.model_flops += t.model_flops;
    out.hardware_flops += t.hardware_flops;
    out.tasks += static_cast<std::int64_t>(t.ops.size());
  }
  for (const StepOpRef& ref : step.step_ops) {
    if (ref.op->phase == Phase::kStep) continue;
    out.model_flops += ref.op->flops();  // the drained output-layer wgrads
    out.hardware_flops += ref.op->flops();
  }
  out.tasks += static_cast<std::int64_t>(step.transfers.size() + step.step_ops.size());
  return out;
}

/// The task counts, the full-rank summary and the critical chain (on every GPU in full rank,
/// with its segments named by stage).
void summarise_run(const Workload& w, const StepRun& ran, const StepWork& work,
                   Prediction& pred) {
  const BuiltStep& step = ran.step();
  const std::unique_ptr<FullRankStep>& full = ran.full;
  pred.simulated_tasks = full ? work.tasks * full->lanes : work.tasks;
  pred.engine_tasks = static_cast<std::int64_t>(full ? full->step.graph.size() : step.graph.size());
  if (!full) {
    pred.critical_chain = walk_critical_chain(step, ran.lane_run);
    return;
  }
  const EngineResult& full_run = ran.full_run;
  const std::int64_t lane = ran.lane;
  const std::int32_t last = full_run.last_task == TaskTiming::kNone
                                ? 0
                                : full->step.graph.tasks()[full_run.last_task].rank;
  const std::int64_t tp_size = w.training.tensor_model_parallel_size;
  const std::int64_t cp_size = w.training.context_parallel_size;
  pred.full_rank = FullRankSummary{.gpus = w.training.world_size,
                                   .critical_rank = last,
                                   .tp = lane % tp_size,
                                   .cp = lane / tp_size % cp_size,
                                   .dp = lane / (tp_size * cp_size),
                                   .paces = static_cast<std::int32_t>(full->builds.size())};
  pred.critical_chain = walk_critical_chain(full->step, full_run);
  for (ChainSegment& s : pred.critical_chain.longest) {
    s.rank = full->stage_of_rank[static_cast<std::size_t>(s.rank)];
  }
}

/// MFU, HFU, TFLOP/s and tokens/s: the representative rank of each stage stands for its
/// t * cp * dp peers.
void rates(const Workload& w, StepWork work, Prediction& pred) {
  const double replicas = static_cast<double>(w.training.tensor_model_parallel_size *
                                              w.training.context_parallel_size *
                                              w.training.data_parallel_size);
  work.model_flops *= replicas;
  work.hardware_flops *= replicas;
  const double gpus = static_cast<double>(w.training.world_size);
  const double peak = w.system.peak_flops(w.training.params_dtype);
  if (pred.step_time_s > 0) {
    pred.mfu = work.model_flops / (pred.step_time_s * gpus * peak);
    pred.hfu = work.hardware_flops / (pred.step_time_s * gpus * peak);
    pred.tflops_per_gpu = work.hardware_flops / (pred.step_time_s * gpus) / 1e12;
    pred.tokens_per_s = static_cast<double>(w.training.global_batch_size * w.model.seq_length) /
                        pred.step_time_s;
  }
}

/// The step's timeline: one lane's slices and memory, and the chain's links on that lane.
void fill_timeline(const Workload& w, const WorkloadPlan& plan, const StepRun& ran,
                   const StepMemory& memory, const Prediction& pred,
                   const ScheduleParams& schedule, Timeline& tl) {
  const BuiltStep& step = ran.step();
  tl.label = "predicted";
  tl.step_time_s = pred.step_time_s;
  tl.ranks = static_cast<std::int32_t>(plan.stages.size());
  tl.memory = memory.curves;
  tl.memory_capacity_bytes = w.system.memory_bytes;
  expand_slices(step, ran.lane_run, plan, tl);
  tl.idle = idle_spans(step, ran.lane_run, plan, pred.step_time_s,
                       stage_bubble_parts(pred.stages, schedule));
  if (!ran.full) {
    tl.critical_chain = chain_links(step, ran.lane_run);
    return;
  }
  // The timeline is one lane's: the chain's stretches on other lanes ran at other times.
  for (ChainLink link : chain_links(ran.full->step, ran.full_run)) {
    const auto r = static_cast<std::size_t>(link.rank);
    if (ran.full->lane_of_rank[r] != ran.lane) continue;
    link.rank = ran.full->stage_of_rank[r];
    tl.critical_chain.push_back(link);
  }
}

}  // namespace

ScheduleParams schedule_params_of(const Workload& w) {
  const TrainingConfig& t = w.training;
  ScheduleParams p;
  p.kind = t.interleaved() ? ScheduleKind::kInterleaved : ScheduleKind::kOneFOneB;
  p.pipeline_size = static_cast<std::int32_t>(t.pipeline_model_parallel_size);
  p.virtual_size = static_cast<std::int32_t>(t.virtual_pipeline_model_parallel_size);
  p.microbatches = static_cast<std::int32_t>(t.num_microbatches);
  p.group_size = t.interleaved() ? static_cast<std::int32_t>(t.microbatch_group_size_per_vp_stage) : 0;
  p.overlap_p2p_comm = t.interleaved() && t.overlap_p2p_comm;
  p.combined_1f1b = t.overlap_moe_expert_parallel_comm;
  return p;
}

Result<SimulationResult> simulate(const Workload& w, const WorkloadPlan& plan,
                                  const CostModel& cost, const SimulateOptions& given) {
  // The scenario's heterogeneity section, with the caller's (predict's flags) added.
  const SimulateOptions options = with_heterogeneity(w, given);
  // NCCL_ALGO / NCCL_PROTO that leave one of the job's collectives no algorithm: NCCL stops.
  if (Errors none = nccl_unavailable_errors(w, plan); !none.empty()) return none;
  Result<std::shared_ptr<const Schedule>> schedule = schedule_of(w, options);
  if (!schedule.ok()) return schedule.errors();
  Result<StepRun> ran = run_step(w, plan, **schedule, cost, options);
  if (!ran.ok()) return ran.errors();
  const BuiltStep& step = ran->step();
  const EngineResult& run = ran->lane_run;

  SimulationResult out;
  Prediction& pred = out.prediction;
  pred.step_time_s = run.makespan_s;
  const auto ranks = static_cast<std::int32_t>(plan.stages.size());
  const std::vector<RankTime> times = account_ranks(step, run, ranks);
  const StepMemory memory = simulate_memory(step, run, plan, options.keep_timeline);
  summarise_stages(w, times, memory, pred);
  pred.critical_path = critical_path_of(step, run, times, pred.step_time_s);
  const StepWork work = step_work(step);
  summarise_run(w, *ran, work, pred);
  rates(w, work, pred);
  pred.warnings = cost.warnings();
  pred.provenance = cost.provenance();
  if (!pred.fits_in_memory) {
    pred.warnings.push_back("peak memory exceeds the " + std::to_string(w.system.memory_bytes) +
                            " bytes of a " + w.system.gpu_name);
  }

  if (Errors bad = non_finite_fields(pred, w.source_file); !bad.empty()) return bad;

  out.schedule = std::move(schedule).value();
  if (options.keep_timeline) {
    fill_timeline(w, plan, *ran, memory, pred, out.schedule->params, out.timeline);
  }
  return out;
}

}  // namespace stepsim::sim
