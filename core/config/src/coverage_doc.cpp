#include "stepsim/config/coverage_doc.hpp"

#include "stepsim/config/megatron_flags.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim {

namespace {

std::string code(std::string_view s) { return "`" + std::string(s) + "`"; }

}  // namespace

std::string unmodelled_arguments_markdown() {
  std::string out =
      "### Megatron-LM arguments that change the job and are not modelled\n\n"
      "A scenario key or a launch-line flag naming one of these exits 2 naming it, unless it "
      "is given with the value that leaves the job as stepsim models it.\n\n"
      "| flag | scenario key | harmless with |\n|---|---|---|\n";
  std::string harmless;
  for (const UnmodelledArgument& a : unmodelled_arguments()) {
    if (!a.changes_job) {
      harmless += "- " + code(a.flag) + "\n";
      continue;
    }
    out += "| " + code(a.flag) + " | " + code(a.dest) + " | " +
           (a.neutral_value.empty() ? std::string("—") : code(a.neutral_value)) + " |\n";
  }
  out +=
      "\n### Megatron-LM arguments that leave a step's time and memory alone\n\n"
      "Accepted from a launch line and named in one quiet note, by class.\n\n";
  for (const HarmlessFlagClass& c : harmless_flag_classes()) {
    out += "- **" + std::string(c.name) + "**: " + std::string(c.why) + ". ";
    for (std::size_t i = 0; i < c.flags.size(); ++i) {
      out += (i == 0 ? "" : ", ") + code(c.flags[i]);
    }
    out += "\n";
  }
  out += "\nAnd these settings of the not-modelled table (hyper-parameters, numerics):\n\n" +
         harmless;
  return out;
}

}  // namespace stepsim
