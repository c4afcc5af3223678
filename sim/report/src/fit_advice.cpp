// "Make it fit" as text and JSON (fit_advice.hpp).

#include "stepsim/report/fit_advice.hpp"

#include <string_view>

#include "report_words.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/report/json_writer.hpp"

namespace stepsim::sim {
namespace {

using report_words::fmt;

std::string gib(std::int64_t bytes) {
  return fmt("%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

/// "recompute_granularity selective -> full": the key without its section, as Megatron's
/// argument is named.
std::string change_text(const FitChange& c) {
  const std::string_view key = c.key;
  const std::size_t dot = key.find('.');
  return std::string(dot == std::string_view::npos ? key : key.substr(dot + 1)) + " " + c.from +
         " -> " + c.to;
}

/// A printed value of scenario key `key` as the scenario file writes it: a number, a boolean,
/// a string, or null for a choice whose first name ("none") is Megatron's None.
void typed_value(JsonWriter& j, std::string_view key, const std::string& printed) {
  const KeyInfo* info = find_schema_key(key);
  if (info != nullptr && info->kind == KnobKind::kInt) {
    j.value(static_cast<std::int64_t>(std::stoll(printed)));
  } else if (info != nullptr && info->kind == KnobKind::kBool) {
    j.value(printed == "true");
  } else if (info != nullptr && info->kind == KnobKind::kChoice && info->null_choice &&
             !info->choices.empty() && printed == info->choices[0]) {
    j.null();
  } else {
    j.value(std::string_view(printed));
  }
}

}  // namespace

void write_fit_advice_text(const FitAdvice& advice, std::ostream& out, std::string_view subject) {
  out << "does not fit: ";
  if (!subject.empty()) out << subject << ": ";
  out << (advice.simulated_peak ? "simulated" : "largest") << " peak "
      << gib(advice.peak_bytes) << " of " << gib(advice.capacity_bytes) << " on pipeline stage "
      << advice.stage << (advice.simulated_peak ? "" : " (memory model)") << "; ";
  if (advice.suggestions.empty()) {
    out << "none of the " << advice.tried
        << " changes of one or two knobs stepsim tries fits (recompute, distributed optimizer, "
           "micro-batch, tensor, context, pipeline and expert parallelism)\n";
    return;
  }
  out << advice.suggestions.size() << (advice.suggestions.size() == 1 ? " change" : " changes")
      << " that fit" << (advice.suggestions.size() == 1 ? "s" : ", fastest first") << ":\n";
  for (std::size_t i = 0; i < advice.suggestions.size(); ++i) {
    const FitSuggestion& s = advice.suggestions[i];
    out << "  " << i + 1 << ". ";
    for (std::size_t c = 0; c < s.changes.size(); ++c) {
      out << (c == 0 ? "" : ", ") << change_text(s.changes[c]);
    }
    out << "\n     step " << fmt("%.4f s", s.step_time_s) << ", peak "
        << gib(s.analytic_peak_bytes) << " (simulated " << gib(s.simulated_peak_bytes) << ")";
    if (!s.megatron_args.empty()) out << "; Megatron-LM: " << s.megatron_args;
    out << "\n";
  }
}

void write_fit_advice_json(JsonWriter& j, const FitAdvice& advice) {
  j.begin_object();
  j.field("peak_bytes", advice.peak_bytes);
  j.field("peak", std::string_view(advice.simulated_peak ? "simulated" : "analytic"));
  j.field("capacity_bytes", advice.capacity_bytes);
  j.field("stage", advice.stage);
  j.field("tried", advice.tried);
  j.key("suggestions").begin_array();
  for (const FitSuggestion& s : advice.suggestions) {
    j.begin_object();
    j.key("changes").begin_array();
    for (const FitChange& c : s.changes) {
      j.begin_object();
      j.field("key", std::string_view(c.key));
      j.key("from");
      typed_value(j, c.key, c.from);
      j.key("to");
      typed_value(j, c.key, c.to);
      j.end_object();
    }
    j.end_array();
    j.field("megatron_args", std::string_view(s.megatron_args));
    j.field("analytic_peak_bytes", s.analytic_peak_bytes);
    j.field("simulated_peak_bytes", s.simulated_peak_bytes);
    j.field("step_time_s", s.step_time_s);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace stepsim::sim
