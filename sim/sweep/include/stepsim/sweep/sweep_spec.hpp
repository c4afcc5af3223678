#pragma once
// A sweep: a base scenario, the knobs to vary (each a list of values or "auto"), constraints,
// an objective and how many configurations to report. Loaded and checked once from JSON by
// load_sweep_file(); afterwards the sweep planner (stepsim/sim/sweep.hpp) never sees JSON.
//
// Knobs are scenario keys in dotted form ("training.tensor_model_parallel_size",
// "system.inter_node.bandwidth_Bps") plus "system" (another system file). The knob
// table below is the single list of what can be swept; its order is the enumeration order
// (outermost first), chosen so that every "auto" range only depends on knobs before it.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/check/load.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim {

/// What the sweep knows about one scenario key: its schema row (see schema.hpp).
using KnobInfo = KeyInfo;

/// Stable index of a knob in knob_table().
using KnobId = std::int32_t;

/// Every sweepable knob: the schema rows with sweep != Sweep::kNo, in schema order, which is
/// the enumeration order (outermost first).
std::span<const KnobInfo> knob_table();

/// The knob with this dotted key, or -1.
KnobId find_knob(std::string_view key);

/// The value as the CSV and reports print it ("8", "true", "selective", "none",
/// "2.5e+10", a system's name).
std::string format_knob_value(KnobId knob, const KnobValue& v,
                              std::span<const SystemConfig> systems);

/// Keys of the base scenario that were omitted and take Megatron's default, which a sweep
/// must re-derive when the knobs they depend on change (e.g. padded_vocab_size depends on
/// tensor_model_parallel_size, ffn_hidden_size on hidden_size).
struct DefaultedKeys {
  bool num_query_groups = false;
  bool kv_channels = false;
  bool ffn_hidden_size = false;
  bool max_position_embeddings = false;
  bool padded_vocab_size = false;  ///< derived from vocab_size
  bool microbatch_group_size_per_vp_stage = false;
  bool recompute_num_layers = false;
  bool overlap_p2p_comm = false;
  /// The base gave num_layers_per_virtual_pipeline_stage (v follows p), not
  /// virtual_pipeline_model_parallel_size (layers per chunk follow p).
  bool virtual_from_layers_per_stage = false;
  bool operator==(const DefaultedKeys&) const = default;
};

/// One swept knob.
struct SweepAxis {
  KnobId knob = -1;
  bool automatic = false;         ///< "auto": values computed per configuration
  std::vector<KnobValue> values;  ///< the listed values when !automatic, in file order
  bool operator==(const SweepAxis&) const = default;
};

enum class SweepObjective : std::uint8_t {
  kMaxTokensPerS,
  kMinStepTime,
  kMinGpus,
  kMaxTokensPerSPerGpu,  ///< throughput per GPU: the cheapest tokens
  kMinTimeToTrain,       ///< whole steps to train SweepSpec::train_tokens, times the step time
  /// The cheapest: dollars per million tokens at SweepSpec::price_per_gpu_hour, or, with
  /// train_tokens, the dollars of the whole run (whole steps).
  kMinCost,
};

std::string_view to_string(SweepObjective o);
/// The objective of this name (as to_string spells it), or nullopt.
std::optional<SweepObjective> sweep_objective_named(std::string_view name);
/// Every objective's name, comma-separated (for messages and --help).
std::string sweep_objective_names();

/// The largest price_per_gpu_hour a sweep takes.
inline constexpr double kMaxPricePerGpuHour = 1e6;


struct SweepConstraints {
  /// Fraction of device memory that must stay free: feasible iff peak <= (1 - h) * memory.
  double memory_headroom = 0.0;
  std::int64_t max_gpus = 0;        ///< 0: no limit on world_size
  double step_time_budget_s = 0.0;  ///< 0: no limit
  bool operator==(const SweepConstraints&) const = default;
};

struct SweepSpec {
  std::string file;  ///< the sweep file (for messages)
  /// The shipped files' folder (LoadOptions::scenarios_dir): where a base without cost_model
  /// finds the public profile of each swept system's GPU.
  std::string scenarios_dir;
  Workload base;  ///< the validated base scenario
  DefaultedKeys defaulted;
  std::vector<SystemConfig> systems;  ///< systems named on the "system" axis
  std::vector<SweepAxis> axes;        ///< sorted by knob id (enumeration order)
  SweepConstraints constraints;
  SweepObjective objective = SweepObjective::kMaxTokensPerS;
  std::int64_t top = 10;  ///< configurations listed in the summary
  /// "train_tokens": the token budget the summary prices (time, GPU-hours); needed by
  /// min_time_to_train. 0: not given.
  std::int64_t train_tokens = 0;
  /// "price_per_gpu_hour" (or --price-per-gpu-hour): what one GPU costs for an hour, in the
  /// user's currency (the reports write $); prices every configuration per million tokens
  /// and, with train_tokens, per training run. 0: not given.
  double price_per_gpu_hour = 0;
  bool operator==(const SweepSpec&) const = default;
};

/// Re-checks what the objective needs (train_tokens for min_time_to_train, a price for
/// min_cost) after command-line overrides; errors name `file` and the key.
Errors check_sweep_objective(const SweepSpec& spec);

/// Reads and checks a sweep file. Every problem (unknown key, bad value, "auto" on a knob
/// that has no range, invalid base scenario) is reported, naming the file and the key.
Result<SweepSpec> load_sweep_file(const std::string& path, const LoadOptions& options);

/// Same from text; `file_label` names it in errors, `base_dir` resolves relative paths.
/// When `base_override` is non-empty it is the base scenario's JSON text (e.g. from
/// --megatron-args) and the file must not have a "base" key.
Result<SweepSpec> load_sweep_text(std::string_view text, const std::string& file_label,
                                  const std::string& base_dir, const LoadOptions& options,
                                  std::string_view base_override = {});

/// Which omitted keys of a scenario JSON text take Megatron's defaults (see DefaultedKeys).
/// The text must be a scenario that load_scenario_text accepts.
DefaultedKeys defaulted_keys_of_scenario(std::string_view scenario_json);

}  // namespace stepsim
