#pragma once
// The scenario schema: every key a scenario (or a system file) can hold, declared once with its
// Workload member, type, default, Megatron-LM flags, the rule it obeys and one line of doc.
// This one table drives the scenario loader, its "unknown key" / "not modelled" / "did you
// mean" messages, the sweep knobs (sweep_spec.hpp's knob_table() is its sweepable rows, in
// table order), the Megatron-LM launch-line importer and the generated key reference
// docs/scenario-keys.md. The Megatron-LM arguments stepsim knows but does not model are the
// second table here: a scenario key or a launch-line flag naming one is an error that says so.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// How a key's value is written and stored.
enum class KnobKind : std::uint8_t {
  kInt,     ///< JSON integer (positive unless the key's check says otherwise)
  kBool,    ///< JSON true/false
  kReal,    ///< JSON number
  kChoice,  ///< JSON string from a fixed list (or null for the first choice when null_choice)
  kSystem,  ///< a system file path (relative to the scenario/sweep file or scenarios/)
  kString,  ///< free text (names); never swept
};

/// One value of a key. Which member is meaningful depends on the key's kind.
struct KnobValue {
  std::int64_t integer = 0;  ///< kInt; kBool as 0/1; kChoice as the choice's ordinal
  double real = 0;           ///< kReal
  std::int32_t system = -1;  ///< kSystem: index into SweepSpec::systems
  bool operator==(const KnobValue&) const = default;
};

/// How a key is swept.
enum class Sweep : std::uint8_t {
  kNo,      ///< not a sweep knob
  kListed,  ///< a knob with listed values
  kAuto,    ///< a knob that also accepts "auto" (its full valid range)
};

/// One row of the schema.
struct KeyInfo {
  std::string_view key = {};  ///< dotted scenario key: "model.num_layers", "system.memory_bytes"
  KnobKind kind = KnobKind::kInt;
  /// Writes the value into a workload (no derivation of defaults). nullptr: the loader handles
  /// the key by hand (it has no member of its own, e.g. recompute_activations).
  void (*set)(Workload& w, const KnobValue& v) = nullptr;
  /// Reads the key's current value from a workload (nullptr where set is nullptr).
  KnobValue (*get)(const Workload& w) = nullptr;
  /// kChoice: accepted strings; index = ordinal.
  std::span<const std::string_view> choices = {};
  /// kChoice: choices[0] ("none") is written as JSON null (Megatron's None).
  bool null_choice = false;
  bool required = false;  ///< the scenario must give it
  Sweep sweep = Sweep::kNo;
  bool autoable = false;  ///< = (sweep == kAuto); kept for the sweep planner
  /// Megatron-LM's flags for the key, space-separated: "--num-layers" takes a value;
  /// "--swiglu=true" or "--use-rotary-position-embeddings=rope" sets the value without one.
  /// Empty for keys that are not Megatron arguments (system figures).
  std::string_view flags = {};
  /// The environment variable that sets the key on a launch line ("NVTE_FWD_LAYERNORM_SM_MARGIN=16
  /// torchrun ..."), for settings Transformer Engine reads from the environment. Empty for most.
  std::string_view env = {};
  std::string_view default_text = {};  ///< the default, as the reference prints it
  /// The rule(s) the value obeys, as the reference prints it; after the range when the row
  /// has one (check_text() joins them).
  std::string_view check = {};
  std::string_view doc = {};  ///< one line
  /// kInt: 0 is a valid value (e.g. wgrad_deferral_limit's "all"); a ranged kReal: 0 is valid
  /// besides the range (a peak of 0: the GPU lacks that dtype).
  bool zero_allowed = false;
  /// A system figure's range [min, max] in `unit` ("FLOP/s", "seconds"), which the system
  /// loader enforces (system_number_problem); empty unit: the row has no range.
  double min = 0;
  double max = 0;
  std::string_view unit = {};
  /// kInt: the largest value the loaders accept (scenario, system file, sweep knob), checked
  /// where the value enters; 0: kMaxInt32Key. `int_max_why` says why (the type the value is
  /// held in downstream, or Megatron-LM's own bound); empty: kMaxInt32Why.
  std::int64_t int_max = 0;
  std::string_view int_max_why = {};
};

/// The default upper bound of an integer key: a 32-bit int.
inline constexpr std::int64_t kMaxInt32Key = 2147483647;
inline constexpr std::string_view kMaxInt32Why =
    "int32: Megatron-LM hands sizes and counts to CUDA kernels, cuBLAS and NCCL as 32-bit ints, "
    "and stepsim narrows layer, rank and chunk indices to int32";

/// The largest value integer key `k` takes, and why (KeyInfo::int_max, int_max_why with
/// defaults).
std::int64_t int_key_max(const KeyInfo& k);
std::string_view int_key_max_why(const KeyInfo& k);

/// The message for integer key `k` given `value` above int_key_max(k) ("=V exceeds ..."),
/// or "" when it is in range. The message follows the key, as Error::message does.
std::string int_key_bound_problem(const KeyInfo& k, std::int64_t value);

/// Every key, in table order: the top level, the system figures, the model, the training
/// configuration. The sweepable rows, in this order, are the sweep's enumeration order
/// (outermost first).
std::span<const KeyInfo> scenario_schema();

/// The row of a dotted key, or nullptr.
const KeyInfo* find_schema_key(std::string_view dotted_key);

/// A row's rule as the key reference prints it: its range ("0 or FLOP/s in [1e9, 1e30]")
/// followed by its check text.
std::string check_text(const KeyInfo& k);

/// A Megatron-LM argument (its dest and flag) that stepsim does not model.
struct UnmodelledArgument {
  std::string_view dest = {};  ///< e.g. "context_parallel_size"
  std::string_view flag = {};  ///< e.g. "--context-parallel-size"
  /// True when it changes the job (its time or memory): a scenario key or a launch-line flag
  /// naming it is an error. False for what only logs, saves or sets hyper-parameters.
  bool changes_job = true;
  /// A value with which the argument leaves the job as stepsim models it (Megatron's
  /// default, e.g. "1" for --context-parallel-size): given with it, the flag is harmless.
  std::string_view neutral_value = {};
  /// Why it changes the job, where more than "stepsim does not model it yet" is to be said
  /// (what it changes and what stepsim lacks to price it); empty for most.
  std::string_view why = {};
};

/// The Megatron-LM arguments stepsim knows and does not model (job-changing and harmless).
std::span<const UnmodelledArgument> unmodelled_arguments();

/// The not-modelled argument whose dest is `dest_or_flag` (or whose flag is, when it starts
/// with "--"), or nullptr.
const UnmodelledArgument* find_unmodelled_argument(std::string_view dest_or_flag);

/// How a launch-line flag outside the schema is treated.
enum class FlagClass : std::uint8_t {
  kHarmless,    ///< logging, paths, data, optimizer hyper-parameters: one quiet note
  kUnmodelled,  ///< changes the job and is not modelled: an error (exit 2)
  kUnknown,     ///< not a flag stepsim knows: treated as kUnmodelled (it may change the job)
};

/// Classifies a flag that is not a schema row's (`value`: the word after it, empty when it
/// takes none).
FlagClass classify_unmodelled_flag(std::string_view flag, std::string_view value);

/// The message for an unknown key `key` of scenario section `section` ("model" or
/// "training"): " is a Megatron-LM argument stepsim does not model yet", or " is not a known
/// key; did you mean \"training.x\"?" (the nearest key by edit distance, when one is close),
/// or " is not a known key". The message follows the key, as Error::message does.
std::string unknown_key_message(std::string_view section, std::string_view key);

/// The key reference (Markdown) generated from the schema: docs/scenario-keys.md.
std::string scenario_keys_markdown();

}  // namespace stepsim
