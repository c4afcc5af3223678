// `stepsim schedule` as a library call (schedule_report.hpp): the knobs checked as the
// command checks them, and the JSON contract.

#include "stepsim/sim/schedule_report.hpp"

#include <string>

namespace stepsim::sim {
namespace {

void write_transfers(std::ostream& out, const std::vector<Transfer>& transfers) {
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
      write_transfers(out, item.comm.transfers);
      out << ",\"waits\":";
      write_transfers(out, item.comm.waits);
      out << '}';
    }
    out << "]}" << (rank.rank + 1 < p.pipeline_size ? "," : "") << '\n';
  }
  out << "]}\n";
}


Result<Schedule> make_requested_schedule(const ScheduleRequest& o) {
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
