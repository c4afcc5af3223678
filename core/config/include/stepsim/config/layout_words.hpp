#pragma once
// The short names of the parallel-layout keys and the one-line description of a job's layout
// built from them ("t8 p4 v3 cp2 ep8 etp1 dp4 mbs1 m128 sp selective dopt fp8=hybrid/delayed"):
// what `stepsim check` prints for a job, the sweep's configuration labels and table headers,
// the Python module's Scenario repr, and the abbreviations a sweep-key typo is matched
// against ("training.tp": did you mean training.tensor_model_parallel_size?).

#include <span>
#include <string>
#include <string_view>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// One key's short name: `header` as a table column and in layout_words(), `aliases` the
/// abbreviations people write for it (Megatron-Core's parallel_state names: tp, pp, vp, cp,
/// ep, etp, dp), space-separated.
struct KeyShortName {
  std::string_view key;
  std::string_view header;
  std::string_view aliases;
};

/// Every key with a short name, in layout order.
std::span<const KeyShortName> key_short_names();

/// The header of a dotted key: its short name, else the part after the last dot.
std::string_view key_header(std::string_view dotted_key);

/// The dotted key an abbreviation (a header or an alias, e.g. "tp", "mbs", "vpp") stands
/// for, or "" when none.
std::string_view key_of_abbreviation(std::string_view word);

/// The job's layout in short words, `sep` between a name and its value ("t8" with "",
/// "t=8" with "="): t, p, v, cp (when > 1), ep and etp (mixture of experts), dp, mbs, m, then
/// the switches that are on: sp, the recompute granularity ("selective", "full-uniform2"),
/// dopt, fsdp, fp8=FORMAT/RECIPE, fp4=RECIPE. World size and system are not in it.
std::string layout_words(const Workload& w, std::string_view sep = "");

/// Whether layout_words() shows the key's value (the sweep labels add the other swept keys
/// as key=value).
bool layout_words_show(std::string_view dotted_key);

}  // namespace stepsim
