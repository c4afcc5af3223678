// `stepsim schedule`: prints the per-rank order of forward/backward actions (and, on request,
// Megatron's p2p calls between them) of a pipeline schedule.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "stepsim/report/schedule_report.hpp"

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

int run_schedule(const ScheduleOptions& o, Env& env) {
  std::ostream& err = *env.err;
  sim::ScheduleRequest request;
  request.pp = o.pp;
  request.vpp = o.vpp;
  request.microbatches = o.microbatches;
  request.group_size = o.group_size;
  request.group_size_given = o.group_size_given;
  request.gpipe = o.gpipe;
  request.overlap_p2p = o.overlap_p2p;
  const Result<sim::Schedule> schedule = sim::make_requested_schedule(request);
  if (!schedule) {
    for (const Error& e : schedule.errors()) err << "stepsim schedule: " << e.to_string() << '\n';
    return 2;
  }

  std::ostream& out = *env.out;
  if (o.format == "json") {
    sim::write_schedule_json(out, *schedule);
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
