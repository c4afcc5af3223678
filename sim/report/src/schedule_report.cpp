// `stepsim schedule` as a library call (schedule_report.hpp): the knobs checked as the
// command checks them, and the JSON contract.

#include "stepsim/report/schedule_report.hpp"

#include <string>

namespace stepsim::sim {
namespace {

void write_transfers(std::ostream& out, std::span<const Transfer> transfers) {
  out << '[';
  bool first = true;
  for (const Transfer& t : transfers) {
    if (!first) out << ',';
    first = false;
    out << "[\"" << (t.send ? "send" : "recv") << "\",\""
        << (t.tensor == TensorKind::kActivation ? "activation" : "gradient") << "\","
        << t.microbatch << ',' << t.producer_virtual_stage << ',' << t.peer << ']';
  }
  out << ']';
}

/// The `schedule` JSON contract: {"ranks":[{"rank":r,"ops":[["F",mb,chunk],...]}]}, plus
/// "params", each rank's "warmup" and "comm": Megatron's p2p calls, each with "at" = the
/// number of compute actions that precede it in the rank's program.
}  // namespace

void write_schedule_json(std::ostream& out, const Schedule& s) {
  const ScheduleParams& p = s.params;
  out << "{\"params\":{\"schedule\":\"" << to_string(p.kind) << "\",\"pp\":" << p.pipeline_size
      << ",\"vpp\":" << p.virtual_size << ",\"microbatches\":" << p.microbatches
      << ",\"group_size\":" << p.group_size
      << ",\"overlap_p2p_comm\":" << (p.overlap_p2p_comm ? "true" : "false") << "},\n"
      << "\"ranks\":[\n";
  for (const RankProgram& rank : s.ranks) {
    out << "{\"rank\":" << rank.rank << ",\"warmup\":" << warmup_microbatches(p, rank.rank)
        << ",\"ops\":[";
    bool first = true;
    for (const Action& a : rank.actions) {
      if (!first) out << ',';
      first = false;
      out << "[\"" << (a.type == ActionType::kForward ? 'F' : 'B') << "\"," << a.microbatch
          << ',' << a.chunk << ']';
    }
    out << "],\"comm\":[";
    first = true;
    std::size_t at = 0;
    for (const ProgramItem& item : rank.items) {
      if (item.kind == ProgramItem::Kind::kCompute) {
        ++at;
        continue;
      }
      if (!first) out << ',';
      first = false;
      out << "{\"at\":" << at << ",\"call\":\"" << item.comm.name
          << "\",\"blocking\":" << (item.comm.blocking ? "true" : "false") << ",\"transfers\":";
      write_transfers(out, rank.transfers_of(item.comm));
      out << ",\"waits\":";
      write_transfers(out, rank.waits_of(item.comm));
      out << '}';
    }
    out << "]}" << (rank.rank + 1 < p.pipeline_size ? "," : "") << '\n';
  }
  out << "]}\n";
}


namespace {

// Bounds on the sizes that reach an allocation or a loop. The scenario loader's limits
// (core/check/src/check_limits.cpp): at most 2^14 layers, so as many pipeline stages, and 2^20
// micro-batches times model chunks per rank; the whole schedule is also bounded, since it is
// printed (2^22 forward and backward steps are about 40 MB of text).
constexpr std::int64_t kMaxPipelineSize = std::int64_t{1} << 14;
constexpr std::int64_t kMaxVirtualMicrobatches = std::int64_t{1} << 20;
constexpr std::int64_t kMaxScheduleSteps = std::int64_t{1} << 22;

/// The knobs' sizes, checked before anything is allocated; messages name the command's options.
Errors check_bounds(const ScheduleRequest& o) {
  Errors errors;
  const auto error = [&](const char* option, std::string rule) {
    errors.push_back(Error{"", option, std::move(rule)});
  };
  const auto positive = [&](const char* option, const char* name, std::int64_t v) {
    if (v < 1) error(option, "=" + std::to_string(v) + " must be >= 1 (" + name + ")");
  };
  positive("--pp", "pipeline_model_parallel_size", o.pp);
  positive("--vpp", "virtual_pipeline_model_parallel_size", o.vpp);
  positive("--microbatches", "number of micro-batches", o.microbatches);
  if (!errors.empty()) return errors;
  const std::int64_t per_rank = std::int64_t{o.microbatches} * o.vpp;
  const std::string limit = " exceeds stepsim's limit of ";
  if (o.group_size_given && o.group_size > kMaxVirtualMicrobatches) {
    error("--group-size", "=" + std::to_string(o.group_size) + limit +
                              std::to_string(kMaxVirtualMicrobatches) +
                              " (microbatch_group_size_per_vp_stage)");
  } else if (o.pp > kMaxPipelineSize) {
    error("--pp", "=" + std::to_string(o.pp) + limit + std::to_string(kMaxPipelineSize) +
                      " pipeline stages");
  } else if (per_rank > kMaxVirtualMicrobatches) {
    error("--microbatches", "=" + std::to_string(o.microbatches) + " times --vpp=" +
                                std::to_string(o.vpp) + limit +
                                std::to_string(kMaxVirtualMicrobatches) +
                                " micro-batches times model chunks per rank");
  } else if (per_rank * 2 * o.pp > kMaxScheduleSteps) {
    error("--pp", "=" + std::to_string(o.pp) + " x --vpp=" + std::to_string(o.vpp) +
                      " x --microbatches=" + std::to_string(o.microbatches) + " gives " +
                      std::to_string(per_rank * 2 * o.pp) +
                      " forward and backward steps, beyond stepsim's limit of " +
                      std::to_string(kMaxScheduleSteps) + " to print");
  }
  return errors;
}

}  // namespace

Result<Schedule> make_requested_schedule(const ScheduleRequest& o) {
  if (Errors bounds = check_bounds(o); !bounds.empty()) return bounds;
  Errors errors;
  const bool interleaved = !o.gpipe && o.vpp > 1;
  if (o.overlap_p2p && !interleaved) {
    errors.push_back(Error{"", "",
                           "--overlap-p2p applies to the interleaved schedule only (--vpp > 1, "
                           "without --gpipe); Megatron-LM turns overlap_p2p_comm off otherwise"});
  }
  if (o.group_size_given && !interleaved) {
    errors.push_back(Error{"", "",
                           "--group-size applies to the interleaved schedule only (--vpp > 1, "
                           "without --gpipe)"});
  }
  if (o.group_size_given && o.group_size < 1) {
    errors.push_back(Error{"", "",
                           "--group-size=" + std::to_string(o.group_size) +
                               " must be >= 1 (microbatch_group_size_per_vp_stage)"});
  }
  ScheduleParams params;
  params.kind = o.gpipe       ? ScheduleKind::kGPipe
                : interleaved ? ScheduleKind::kInterleaved
                              : ScheduleKind::kOneFOneB;
  params.pipeline_size = o.pp;
  params.virtual_size = o.vpp;
  params.microbatches = o.microbatches;
  params.group_size = o.group_size_given && o.group_size >= 1 ? o.group_size : 0;
  params.overlap_p2p_comm = o.overlap_p2p;
  Result<Schedule> schedule = make_schedule(params);
  if (!schedule) errors.insert(errors.end(), schedule.errors().begin(), schedule.errors().end());
  if (!errors.empty()) return errors;
  return schedule;
}

}  // namespace stepsim::sim
