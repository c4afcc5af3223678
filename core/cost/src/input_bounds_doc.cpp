// docs/input-bounds.md: the integer keys' bounds of the schema table (config) and of the
// profile reader (cost), in one page.

#include "stepsim/cost/input_bounds_doc.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "stepsim/config/schema.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim {

namespace {

// 2147483647 as "2^31 - 1", 1125899906842624 as "2^50": the bounds read as their types.
std::string bound_text(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::max()) return "2^63 - 1";
  for (int e = 10; e < 63; ++e) {
    const std::int64_t p = std::int64_t{1} << e;
    if (v == p) return "2^" + std::to_string(e);
    if (v == p - 1) return "2^" + std::to_string(e) + " - 1";
  }
  return std::to_string(v);
}

std::string md_cell(std::string_view text) {
  std::string s;
  for (const char c : text) s += c == '|' ? std::string("\\|") : std::string(1, c);
  return s;
}

}  // namespace

std::string input_bounds_markdown() {
  std::string out =
      "# Input bounds\n\n"
      "Generated from the schema table in `core/config/src/schema.cpp` and the profile reader's\n"
      "bounds (`core/cost/src/profile_io.cpp`) by `stepsim_scenario_keys --bounds`\n"
      "(`build/bin/stepsim_scenario_keys --bounds > docs/input-bounds.md`); the test\n"
      "`Schema.InputBoundsAreCurrent` fails when this file is stale. Do not edit it by hand.\n\n"
      "Every number a scenario, system file, sweep file or calibration profile gives is checked\n"
      "where it enters, against what the code that uses it can hold: a value outside its range\n"
      "is an error naming the file and the key (exit 2), never truncated later. Integers are JSON\n"
      "integers (`8`, not `8.0`); numbers are finite doubles. Products of several keys (bytes of\n"
      "activations, logits, parameters) are checked too, when the scenario is validated\n"
      "(`core/check/src/check_limits.cpp`: each must fit in int64), as are stepsim's own limits:\n"
      "2^24 GPUs (`training.world_size`), 2^14 layers (`model.num_layers`).\n\n"
      "Numbers on the command line (`--world-size`, `schedule --pp`, ...) are decimal, as\n"
      "Megatron-LM's argparse reads them: `010` is ten, `0x10` is an error.\n\n"
      "## Integers of scenarios, system files and sweep knobs\n\n"
      "| key | range | why |\n|---|---|---|\n";
  for (const KeyInfo& k : scenario_schema()) {
    if (k.kind != KnobKind::kInt) continue;
    const std::string low = k.key == "system.compute_capability" ? "10"
                            : k.zero_allowed                     ? "0"
                                                                 : "1";
    out += "| `" + std::string(k.key) + "` | [" + low + ", " + bound_text(int_key_max(k)) +
           "] | " + md_cell(int_key_max_why(k)) + " |\n";
  }
  out +=
      "\n## Real numbers of scenarios and system files\n\n"
      "The `model` and `training` numbers are finite and in [0, 1e6] (coefficients, factors and\n"
      "fractions), then each obeys its rule; a system file's figures obey the ranges of their\n"
      "rules (a rate below them is no accelerator or link stepsim models, one above is a typo).\n\n"
      "| key | range and rule |\n|---|---|\n";
  for (const KeyInfo& k : scenario_schema()) {
    if (k.kind != KnobKind::kReal) continue;
    const bool system = k.key.starts_with("system.");
    std::string rule = system ? check_text(k) : "[0, 1e6]";
    if (!system && !k.check.empty()) rule += "; " + std::string(k.check);
    out += "| `" + std::string(k.key) + "` | " + md_cell(rule) + " |\n";
  }
  out +=
      "\n## Integers of calibration profiles\n\n"
      "The same key has the same range in every sample kind (`m` of `gemm[3]`, `group_size` of\n"
      "`allreduce[0]`).\n\n"
      "| key | range | why |\n|---|---|---|\n";
  for (const ProfileIntBound& b : profile_int_bounds()) {
    out += "| `" + std::string(b.key) + "` | [" + std::to_string(b.min) + ", " +
           bound_text(b.max) + "] | " + md_cell(b.why) + " |\n";
  }
  return out;
}

}  // namespace stepsim
