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
#include "step_memory.hpp"
#include "step_timeline.hpp"
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

std::string action_label(const Action& a) {
  return std::string(a.type == ActionType::kForward ? "F" : "B") + " mb" +
         std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
}

const char* chain_kind(TaskKind kind) {
  switch (kind) {
    case TaskKind::kCompute: return "compute";
    case TaskKind::kTransfer: return "p2p";
    case TaskKind::kCollective: return "dp_comm";
    case TaskKind::kStepOp: return "optimizer";
    case TaskKind::kDelay: return "wait";
    case TaskKind::kHost:
      return "host";
    case TaskKind::kJoin: break;
  }
  return "";
}

std::string chain_label(const BuiltStep& step, const Task& task) {
  switch (task.kind) {
    case TaskKind::kCompute:
      return action_label(step.actions[static_cast<std::size_t>(task.payload)].action);
    case TaskKind::kTransfer: {
      const TransferRef& ref = step.transfers[static_cast<std::size_t>(task.payload)];
      return std::string(ref.transfer.tensor == TensorKind::kActivation ? "act" : "grad") +
             " mb" + std::to_string(ref.transfer.microbatch) + " stage " +
             std::to_string(ref.sender) + ">" + std::to_string(ref.receiver);
    }
    case TaskKind::kCollective:
    case TaskKind::kStepOp: {
      const StepOpRef& ref = step.step_ops[static_cast<std::size_t>(task.payload)];
      return (ref.chunk >= 0 ? "c" + std::to_string(ref.chunk) + " " : std::string()) +
             (ref.bucket >= 0 ? "b" + std::to_string(ref.bucket) + " " : std::string()) +
             ref.op->name;
    }
    case TaskKind::kDelay: return "delay";
    case TaskKind::kHost:
      return "host";
    case TaskKind::kJoin: break;
  }
  return "";
}

/// The engine's critical chain: from the task that ended last back through the
/// predecessors that released each task, returned first to last.
std::vector<std::uint32_t> chain_tasks(const EngineResult& run) {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t u = run.last_task; u != TaskTiming::kNone; u = run.timings[u].critical_pred) {
    chain.push_back(u);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

/// The chain's tasks that show on the timeline (not joins or delays, not zero-length), as
/// trace links.
std::vector<ChainLink> chain_links(const BuiltStep& step, const EngineResult& run) {
  std::vector<ChainLink> links;
  for (const std::uint32_t u : chain_tasks(run)) {
    const Task& task = step.graph.tasks()[u];
    const TaskTiming& t = run.timings[u];
    if (task.kind == TaskKind::kJoin || task.kind == TaskKind::kDelay ||
        task.kind == TaskKind::kHost || !(t.end_s > t.start_s)) {
      continue;
    }
    links.push_back(ChainLink{.rank = task.rank, .stream = task.stream, .start_s = t.start_s,
                              .end_s = t.end_s});
  }
  return links;
}

CriticalChain walk_critical_chain(const BuiltStep& step, const EngineResult& run) {
  CriticalChain out;
  const std::vector<std::uint32_t> chain = chain_tasks(run);
  out.tasks = static_cast<std::int64_t>(chain.size());
  struct Span {
    std::uint32_t first, last;
    std::int64_t tasks;
  };
  std::vector<Span> spans;  // consecutive chain tasks of one kind on one rank
  const auto& tasks = step.graph.tasks();
  for (const std::uint32_t u : chain) {
    const Task& task = tasks[u];
    const double d = run.timings[u].end_s - run.timings[u].start_s;
    switch (task.kind) {
      case TaskKind::kCompute: {
        const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
        const ChunkTemplate& t = step.templates[static_cast<std::size_t>(ref.template_index)];
        const double busy = t.compute_busy_s * run.timings[u].stretch(t.duration_s);
        out.compute_s += busy;
        out.tp_comm_s += std::max(0.0, d - busy);
        break;
      }
      case TaskKind::kTransfer: out.p2p_s += d; break;
      case TaskKind::kCollective: out.dp_comm_s += d; break;
      case TaskKind::kStepOp:
        (step.step_ops[static_cast<std::size_t>(task.payload)].op->phase == Phase::kStep
             ? out.optimizer_s
             : out.compute_s) += d;
        break;
      case TaskKind::kDelay: out.wait_s += d; break;
      case TaskKind::kHost:
        out.host_s += d;
        break;
      case TaskKind::kJoin: continue;
    }
    if (!spans.empty()) {
      const Task& prev = tasks[spans.back().last];
      if (prev.rank == task.rank && prev.kind == task.kind) {
        spans.back().last = u;
        ++spans.back().tasks;
        continue;
      }
    }
    spans.push_back(Span{u, u, 1});
  }
  const auto length = [&](const Span& s) {
    return run.timings[s.last].end_s - run.timings[s.first].start_s;
  };
  // Longest first; ties in chain order (stable), so the output is deterministic.
  std::stable_sort(spans.begin(), spans.end(),
                   [&](const Span& a, const Span& b) { return length(a) > length(b); });
  if (spans.size() > 5) spans.resize(5);
  for (const Span& span : spans) {
    const Task& first = tasks[span.first];
    std::string what = chain_label(step, first);
    if (span.last != span.first) what += " .. " + chain_label(step, tasks[span.last]);
    out.longest.push_back(ChainSegment{.rank = first.rank,
                                       .kind = chain_kind(first.kind),
                                       .what = std::move(what),
                                       .tasks = span.tasks,
                                       .start_s = run.timings[span.first].start_s,
                                       .end_s = run.timings[span.last].end_s});
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
  return p;
}

Result<SimulationResult> simulate(const Workload& w, const WorkloadPlan& plan,
                                  const CostModel& cost, const SimulateOptions& given) {
  // The scenario's heterogeneity section, with the caller's (predict's flags) added.
  const SimulateOptions options = with_heterogeneity(w, given);
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
  // What compute and NCCL kernels cost each other: measured on the calibrated machine where
  // the profile says, else the system file's cited coefficients.
  Interference interference = w.system.interference;
  if (const MeasuredInterference* m = cost.interference()) {
    interference = Interference{.compute_slowdown = m->compute_slowdown,
                                .collective_slowdown = m->collective_slowdown,
                                .p2p_post_latency_s = m->p2p_post_latency_s,
                                .collective_post_latency_s = m->collective_post_latency_s};
  }
  BuildOptions build_options{.serialize_streams = options.serialize_streams,
                             .async_p2p = options.async_p2p,
                             .async_grad_reduce = options.async_grad_reduce,
                             .compute_scale = {},
                             .interference = options.contention ? interference : Interference{}};
  EngineOptions engine_options{
      .contention = options.contention, .interference = interference, .nic_capacity = {}};
  std::optional<BuiltStep> representative;
  std::unique_ptr<FullRankStep> full;
  EngineResult full_run, lane_run;
  if (!options.full_rank) {
    if (!options.slow_nics.empty() || options.jitter_sigma != 0) {
      return Error{"", options.slow_nics.empty() ? "--jitter" : "--slow-nic",
                   ": per-GPU heterogeneity needs every GPU simulated: add --full-rank"};
    }
    if (!options.stragglers.empty()) {
      Result<std::vector<double>> scale = straggler_scale(w, options.stragglers);
      if (!scale.ok()) return scale.errors();
      build_options.compute_scale = std::move(scale).value();
    }
    Result<BuiltStep> built = build_step(w, plan, *schedule, cost, build_options);
    if (!built.ok()) return built.errors();
    representative.emplace(std::move(built).value());
    Result<EngineResult> ran = run_engine(representative->graph, engine_options);
    if (!ran.ok()) return ran.errors();
    lane_run = std::move(ran).value();
  } else {
    Result<std::vector<double>> scale = gpu_compute_scales(w, options);
    if (!scale.ok()) return scale.errors();
    Result<std::vector<double>> nic = nic_capacities(w, options);
    if (!nic.ok()) return nic.errors();
    Result<std::unique_ptr<FullRankStep>> made =
        build_full_rank(w, plan, *schedule, cost, build_options, *scale);
    if (!made.ok()) return made.errors();
    full = std::move(made).value();
    engine_options.nic_capacity = std::move(nic).value();
    Result<EngineResult> ran = run_engine(full->step.graph, engine_options);
    if (!ran.ok()) return ran.errors();
    full_run = std::move(ran).value();
  }
  // Full-rank: the per-stage summaries, memory and timeline are those of the lane (one
  // pipeline: fixed tp, cp, dp) holding the GPU whose work ended last.
  std::int64_t lane = 0;
  if (full) {
    if (full_run.last_task != TaskTiming::kNone) {
      lane = full->lane_of_rank[static_cast<std::size_t>(
          full->step.graph.tasks()[full_run.last_task].rank)];
    }
    lane_run = project_lane(*full, full_run, lane);
  }
  const BuiltStep& step =
      full ? full->builds[static_cast<std::size_t>(full->build_of_lane[static_cast<std::size_t>(lane)])]
           : *representative;
  const EngineResult& run = lane_run;

  SimulationResult out;
  Prediction& pred = out.prediction;
  const auto ranks = static_cast<std::int32_t>(plan.stages.size());
  pred.step_time_s = run.makespan_s;

  const std::vector<RankTime> times = account_ranks(step, run, ranks);
  const StepMemory memory = simulate_memory(step, run, plan, options.keep_timeline);
  double busy_total = 0, bubble_total = 0;
  for (std::int32_t r = 0; r < ranks; ++r) {
    const RankTime& rt = times[static_cast<std::size_t>(r)];
    StageSummary s;
    s.stage = r;
    s.busy_s = rt.compute_s + rt.optimizer_s;
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

  const std::int32_t critical =
      run.last_task == TaskTiming::kNone ? 0 : step.graph.tasks()[run.last_task].rank;
  const RankTime& ct = times[static_cast<std::size_t>(critical)];
  CriticalPath& cp = pred.critical_path;
  cp.rank = critical;
  cp.compute_s = ct.compute_s;
  cp.tp_comm_s = ct.exposed_tp_s;
  cp.p2p_s = ct.p2p_exposed_s;
  cp.dp_comm_s = ct.dp_exposed_s;
  cp.optimizer_s = ct.optimizer_s;
  cp.bubble_s = std::max(0.0, pred.step_time_s - cp.compute_s - cp.tp_comm_s - cp.p2p_s -
                                  cp.dp_comm_s - cp.optimizer_s);

  // FLOPs: the representative rank of each stage stands for its t * cp * dp peers.
  double model_flops = 0, hardware_flops = 0;
  std::int64_t tasks = 0;
  for (const ActionRef& a : step.actions) {
    const ChunkTemplate& t = step.templates[static_cast<std::size_t>(a.template_index)];
    model_flops += t.model_flops;
    hardware_flops += t.hardware_flops;
    tasks += static_cast<std::int64_t>(t.ops.size());
  }
  for (const StepOpRef& ref : step.step_ops) {
    if (ref.op->phase == Phase::kStep) continue;
    model_flops += ref.op->flops();  // the drained output-layer wgrads
    hardware_flops += ref.op->flops();
  }
  tasks += static_cast<std::int64_t>(step.transfers.size() + step.step_ops.size());
  pred.simulated_tasks = full ? tasks * full->lanes : tasks;
  pred.engine_tasks = static_cast<std::int64_t>(full ? full->step.graph.size() : step.graph.size());
  if (full) {
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
  } else {
    pred.critical_chain = walk_critical_chain(step, run);
  }
  const double replicas = static_cast<double>(w.training.tensor_model_parallel_size *
                                              w.training.context_parallel_size *
                                              w.training.data_parallel_size);
  model_flops *= replicas;
  hardware_flops *= replicas;
  const double gpus = static_cast<double>(w.training.world_size);
  const double peak = w.system.peak_flops(w.training.params_dtype);
  if (pred.step_time_s > 0) {
    pred.mfu = model_flops / (pred.step_time_s * gpus * peak);
    pred.hfu = hardware_flops / (pred.step_time_s * gpus * peak);
    pred.tflops_per_gpu = hardware_flops / (pred.step_time_s * gpus) / 1e12;
    pred.tokens_per_s = static_cast<double>(w.training.global_batch_size * w.model.seq_length) /
                        pred.step_time_s;
  }
  pred.warnings = cost.warnings();
  if (!pred.fits_in_memory) {
    pred.warnings.push_back("peak memory exceeds the " + std::to_string(w.system.memory_bytes) +
                            " bytes of a " + w.system.gpu_name);
  }

  if (Errors bad = non_finite_fields(pred, w.source_file); !bad.empty()) return bad;

  out.schedule = std::move(schedule);
  if (options.keep_timeline) {
    Timeline& tl = out.timeline;
    tl.label = "predicted";
    tl.step_time_s = pred.step_time_s;
    tl.ranks = ranks;
    tl.memory = memory.curves;
    tl.memory_capacity_bytes = w.system.memory_bytes;
    expand_slices(step, run, plan, tl);
    if (full) {
      // The timeline is one lane's: the chain's stretches on other lanes ran at other times.
      for (ChainLink link : chain_links(full->step, full_run)) {
        const auto r = static_cast<std::size_t>(link.rank);
        if (full->lane_of_rank[r] != lane) continue;
        link.rank = full->stage_of_rank[r];
        tl.critical_chain.push_back(link);
      }
    } else {
      tl.critical_chain = chain_links(step, run);
    }
  }
  return out;
}

}  // namespace stepsim::sim
