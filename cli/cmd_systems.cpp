// `stepsim systems`: the shipped systems by short name (the names scenarios, sweeps and
// --system accept), each with its GPU, node and links, and the shipped profiles of its GPU.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/config/shipped.hpp"

namespace stepsim::cli {
namespace {

/// The profiles, the one a scenario without cost_model takes marked with '*'.
std::string joined(const ShippedSystem& s) {
  std::string out;
  for (const std::string& n : s.profiles) {
    out += (out.empty() ? "" : ", ") + n + (n == s.default_cost_model ? "*" : "");
  }
  return out.empty() ? "-" : out;
}

void write_systems_text(const std::vector<ShippedSystem>& rows, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %-36s %9s %15s %15s  %s\n", "system", "gpu", "gpus/node",
                "intra-node GB/s", "inter-node GB/s", "profiles");
  out << line;
  for (const ShippedSystem& s : rows) {
    std::snprintf(line, sizeof line, "%-22s %-36s %9lld %15.3g %15.3g  %s\n", s.name.c_str(),
                  s.gpu_name.c_str(), static_cast<long long>(s.gpus_per_node),
                  s.intra_node_bandwidth_bytes_per_s / 1e9,
                  s.inter_node_bandwidth_bytes_per_s / 1e9, joined(s).c_str());
    out << line;
  }
  out << "* prices a scenario on the system that gives no cost_model (the roofline where no "
         "profile is marked)\n";
}

int run_systems(const std::string& format, Env& env) {
  const Result<std::vector<ShippedSystem>> rows = shipped_systems(env.scenarios_dir);
  if (!rows.ok()) return report_errors(rows.errors(), env);
  if (format == "json") {
    *env.out << shipped_systems_json(*rows);
  } else {
    write_systems_text(*rows, *env.out);
  }
  env.out->flush();
  return *env.out ? 0 : 1;
}

}  // namespace

void add_systems_command(CLI::App& app, Env& env) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand(
      "systems",
      "The shipped systems by short name (what a scenario's \"system\", a sweep's system\n"
      "knob and --system accept: the file stem or a unique prefix of it), with the GPU,\n"
      "GPUs per node, NVLink and inter-node bandwidth (per GPU and per NIC, one direction)\n"
      "and the shipped profiles of the GPU (for cost_model.profile); the one marked * prices\n"
      "a scenario that gives no cost_model (the roofline where none is marked).");
  cmd->add_option("--format", *format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([format, &env] { env.exit_code = run_systems(*format, env); });
}

}  // namespace stepsim::cli
