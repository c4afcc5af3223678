// `stepsim schedule`: prints the per-rank order of forward/backward actions (and, on request,
// Megatron's p2p calls between them) of a pipeline schedule.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "stepsim/sim/schedule.hpp"

namespace stepsim::cli {
namespace {

struct ScheduleOptions {
  std::int32_t pp = 1;
  std::int32_t vpp = 1;
  std::int32_t microbatches = 1;
  std::int32_t group_size = 0;
  bool group_size_given = false;
  bool gpipe = false;
  bool overlap_p2p = false;
  bool comm = false;
  std::string format = "text";
};

void write_transfers(std::ostream& out, const std::vector<sim::Transfer>& transfers) {
  out << '[';
  bool first = true;
  for (const sim::Transfer& t : transfers) {
    if (!first) out << ',';
    first = false;
    out << "[\"" << (t.send ? "send" : "recv") << "\",\""
        << (t.tensor == sim::TensorKind::kActivation ? "activation" : "gradient") << "\","
        << t.microbatch << ',' << t.producer_virtual_stage << ',' << t.peer << ']';
  }
  out << ']';
}

/// The `schedule` JSON contract: {"ranks":[{"rank":r,"ops":[["F",mb,chunk],...]}]}, plus
/// "params", each rank's "warmup" and "comm": Megatron's p2p calls, each with "at" = the
/// number of compute actions that precede it in the rank's program.
void write_json(std::ostream& out, const sim::Schedule& s) {
  const sim::ScheduleParams& p = s.params;
  out << "{\"params\":{\"schedule\":\"" << sim::to_string(p.kind) << "\",\"pp\":" << p.pipeline_size
      << ",\"vpp\":" << p.virtual_size << ",\"microbatches\":" << p.microbatches
      << ",\"group_size\":" << p.group_size
      << ",\"overlap_p2p_comm\":" << (p.overlap_p2p_comm ? "true" : "false") << "},\n"
      << "\"ranks\":[\n";
  for (const sim::RankProgram& rank : s.ranks) {
    out << "{\"rank\":" << rank.rank << ",\"warmup\":" << sim::warmup_microbatches(p, rank.rank)
        << ",\"ops\":[";
    bool first = true;
    for (const sim::Action& a : rank.actions) {
      if (!first) out << ',';
      first = false;
      out << "[\"" << (a.type == sim::ActionType::kForward ? 'F' : 'B') << "\"," << a.microbatch
          << ',' << a.chunk << ']';
    }
    out << "],\"comm\":[";
    first = true;
    std::size_t at = 0;
    for (const sim::ProgramItem& item : rank.items) {
      if (item.kind == sim::ProgramItem::Kind::kCompute) {
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

int run_schedule(const ScheduleOptions& o, Env& env) {
  std::ostream& err = *env.err;
  bool bad = false;
  const bool interleaved = !o.gpipe && o.vpp > 1;
  if (o.overlap_p2p && !interleaved) {
    err << "stepsim schedule: --overlap-p2p applies to the interleaved schedule only "
           "(--vpp > 1, without --gpipe); Megatron-LM turns overlap_p2p_comm off otherwise\n";
    bad = true;
  }
  if (o.group_size_given && !interleaved) {
    err << "stepsim schedule: --group-size applies to the interleaved schedule only "
           "(--vpp > 1, without --gpipe)\n";
    bad = true;
  }
  if (o.group_size_given && o.group_size < 1) {
    err << "stepsim schedule: --group-size=" << o.group_size
        << " must be >= 1 (microbatch_group_size_per_vp_stage)\n";
    bad = true;
  }
  sim::ScheduleParams params;
  params.kind = o.gpipe       ? sim::ScheduleKind::kGPipe
                : interleaved ? sim::ScheduleKind::kInterleaved
                              : sim::ScheduleKind::kOneFOneB;
  params.pipeline_size = o.pp;
  params.virtual_size = o.vpp;
  params.microbatches = o.microbatches;
  params.group_size = o.group_size_given && o.group_size >= 1 ? o.group_size : 0;
  params.overlap_p2p_comm = o.overlap_p2p;
  const Result<sim::Schedule> schedule = sim::make_schedule(params);
  if (!schedule) {
    for (const Error& e : schedule.errors()) err << "stepsim schedule: " << e.to_string() << '\n';
    bad = true;
  }
  if (bad) return 2;

  std::ostream& out = *env.out;
  if (o.format == "json") {
    write_json(out, *schedule);
    return 0;
  }
  for (const sim::RankProgram& rank : schedule->ranks) {
    out << "rank " << rank.rank << ": "
        << (o.comm ? sim::format_program(rank) : sim::format_actions(rank)) << '\n';
  }
  return out ? 0 : 1;
}

}  // namespace

void add_schedule_command(CLI::App& app, Env& env) {
  auto opts = std::make_shared<ScheduleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "schedule",
      "Print the pipeline schedule Megatron-LM runs: per rank, the order of forward (F) and\n"
      "backward (B) steps as F<micro-batch>c<model chunk>. 1F1B without --vpp, interleaved\n"
      "1F1B with --vpp > 1, GPipe with --gpipe.");
  cmd->add_option("--pp", opts->pp, "pipeline_model_parallel_size (p)")->required();
  cmd->add_option("--vpp", opts->vpp,
                  "virtual_pipeline_model_parallel_size: model chunks per rank (v)")
      ->capture_default_str();
  cmd->add_option("--microbatches", opts->microbatches, "micro-batches per pipeline per step (m)")
      ->required();
  cmd->add_option_function<std::int32_t>(
      "--group-size",
      [opts](const std::int32_t& n) {
        opts->group_size = n;
        opts->group_size_given = true;
      },
      "microbatch_group_size_per_vp_stage (N), interleaved only; default --pp");
  cmd->add_flag("--gpipe", opts->gpipe, "GPipe: all forwards, then all backwards");
  cmd->add_flag("--overlap-p2p", opts->overlap_p2p,
                "overlap_p2p_comm (interleaved only): asynchronous p2p, waited before use");
  cmd->add_flag("--comm", opts->comm, "text: also print Megatron's p2p calls in program order");
  cmd->add_option("--format", opts->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, &env] { env.exit_code = run_schedule(*opts, env); });
}

}  // namespace stepsim::cli
