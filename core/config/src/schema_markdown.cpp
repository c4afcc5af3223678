// The key reference docs/scenario-keys.md, generated from the schema (see schema.hpp).

#include <string>
#include <string_view>

#include "stepsim/config/schema.hpp"

namespace stepsim {

std::string scenario_keys_markdown() {
  std::string out =
      "# Scenario keys\n\n"
      "Generated from the schema table in `core/config/src/schema.cpp` by `stepsim_scenario_keys`\n"
      "(`build/bin/stepsim_scenario_keys > docs/scenario-keys.md`); the test\n"
      "`Schema.KeyReferenceIsCurrent` fails when this file is stale. Do not edit it by hand.\n\n"
      "A scenario is one JSON object: the top-level keys, a `model` and a `training` section\n"
      "(Megatron-LM argument dests; omitted keys take Megatron-LM's defaults), and a `system`\n"
      "(a system file, whose keys are the `system.` rows). Unknown keys are errors: a misspelt "
      "key\n"
      "gets \"did you mean\", a Megatron-LM argument stepsim does not model gets \"does not model\n"
      "yet\" (the list at the end). `Sweep`: a sweep file may vary the key (`auto`: it also takes\n"
      "`\"auto\"`, the key's whole valid range). `Megatron-LM flag`: what `--megatron-args` and\n"
      "`import-megatron` read (`--flag=value` sets the value without taking one); an\n"
      "`environment` entry is a variable of Transformer Engine's that they read from the\n"
      "assignments before the launcher (`NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun ...`).\n\n";
  const auto section_of = [](std::string_view key) -> std::string_view {
    const auto dot = key.find('.');
    return dot == std::string_view::npos ? std::string_view("top level") : key.substr(0, dot);
  };
  const auto kind_of = [](const KeyInfo& k) -> std::string {
    switch (k.kind) {
      case KnobKind::kInt:
        return "integer";
      case KnobKind::kBool:
        return "boolean";
      case KnobKind::kReal:
        return "number";
      case KnobKind::kSystem:
        return "path or object";
      case KnobKind::kString:
        return "string";
      case KnobKind::kChoice: {
        std::string s;
        for (std::size_t i = k.null_choice ? 1 : 0; i < k.choices.size(); ++i) {
          if (!s.empty()) s += " \\| ";
          s += "`\"" + std::string(k.choices[i]) + "\"`";
        }
        return k.null_choice ? s + " \\| null" : s;
      }
    }
    return "?";
  };
  const auto cell = [](std::string_view text) {
    std::string s;
    for (const char c : text) {
      if (c == '|') {
        s += "\\|";
      } else {
        s += c;
      }
    }
    return s;
  };
  std::string_view current;
  for (const KeyInfo& k : scenario_schema()) {
    const std::string_view section = section_of(k.key);
    if (section != current) {
      current = section;
      out += "\n## " + std::string(section) + "\n\n";
      out += "| key | type | default | Megatron-LM flag | sweep | rule | meaning |\n";
      out += "|---|---|---|---|---|---|---|\n";
    }
    std::string flags;
    if (!k.env.empty()) flags = "environment `" + std::string(k.env) + "`";
    std::string_view rest = k.flags;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view flag = rest.substr(0, space);
      if (!flags.empty()) flags += ", ";
      flags += "`" + std::string(flag) + "`";
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    out += "| `" + std::string(k.key) + "` | " + kind_of(k) + " | " + cell(k.default_text) + " | " +
           flags + " | " +
           (k.sweep == Sweep::kAuto     ? "auto"
            : k.sweep == Sweep::kListed ? "yes"
                                        : "") +
           " | " + cell(check_text(k)) + " | " + cell(k.doc) + " |\n";
  }
  out +=
      "\n## Megatron-LM arguments not modelled yet\n\n"
      "A scenario key or a `--megatron-args` flag naming one of these is an error (exit 2).\n\n"
      "| dest | flag |\n|---|---|\n";
  for (const UnmodelledArgument& a : unmodelled_arguments()) {
    out += "| `" + std::string(a.dest) + "` | `" + std::string(a.flag) + "` |\n";
  }
  return out;
}

}  // namespace stepsim
