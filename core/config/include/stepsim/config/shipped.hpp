#pragma once
// The system and profile files shipped under scenarios/, found by short name (their file stem:
// "dgx-h100-80gb" for scenarios/systems/dgx-h100-80gb.json) and listed with what they hold.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// The kinds of shipped file a short name may name, each in its folder of scenarios/.
enum class ShippedKind { kSystem, kProfile };

/// "systems" or "profiles": the folder of `kind` under scenarios/.
const char* shipped_folder(ShippedKind kind);

/// Whether `value` is written as a short name: no '/' and no ".json" in it (anything else
/// is a path, resolved as such).
bool is_short_name(const std::string& value);

/// The stems of the .json files of `kind` under `scenarios_dir`, sorted; empty when the
/// folder is missing.
std::vector<std::string> shipped_stems(const std::string& scenarios_dir, ShippedKind kind);

/// What a short name names among the shipped files of one kind.
struct ShortNameMatch {
  std::string path;  ///< scenarios_dir/<folder>/<stem>.json; "" when none or several match
  /// The stems `value` is a prefix of when it is of several (an ambiguous name), sorted.
  std::vector<std::string> candidates;
};

/// Looks `value` up by stem among the shipped files of `kind`: an exact stem wins, else the
/// one stem it is a prefix of; several such stems leave `path` empty and list them.
ShortNameMatch find_shipped(const std::string& value, const std::string& scenarios_dir,
                            ShippedKind kind);

/// The message for an ambiguous short name (after "=\"value\""): "matches several shipped
/// systems: a, b; give one of them".
std::string ambiguous_short_name(const ShortNameMatch& match, ShippedKind kind);

/// The stem prefix of the profiles of a GPU: its name without the vendor (the first word),
/// lowercased ("NVIDIA H100-SXM5-80GB" -> "h100-sxm5-80gb"); a profile belongs to the GPU when
/// its stem starts with this followed by '-'.
std::string profile_prefix_of_gpu(const std::string& gpu_name);

/// The path of the shipped public profile of a GPU, scenarios_dir/profiles/<prefix>-public.json
/// (the convention of scenarios/profiles/make_public_profiles.py); "" when none ships.
std::string public_profile_of_gpu(const std::string& gpu_name, const std::string& scenarios_dir);

/// The cost model a scenario gets when it leaves `cost_model` out: the shipped public profile
/// of `gpu_name` (public_profile_of_gpu), the roofline when none ships or there is no
/// scenarios_dir (an in-memory workload); `defaulted` set either way.
CostModelSpec default_cost_model(const std::string& gpu_name, const std::string& scenarios_dir);

/// What the reports add to the cost model's line when `spec` was taken by default: why, and
/// how to ask for the other ("default: the shipped public profile of the system's GPU;
/// \"cost_model\": \"roofline\" for the data sheet's roofline"); "" when it was given.
std::string default_cost_model_note(const CostModelSpec& spec, const std::string& gpu_name);

/// One shipped system as `stepsim systems` lists it.
struct ShippedSystem {
  std::string name;  ///< the short name (file stem)
  std::string gpu_name;
  std::int64_t gpus_per_node = 0;
  double intra_node_bandwidth_bytes_per_s = 0;  ///< NVLink, per GPU, one direction
  double inter_node_bandwidth_bytes_per_s = 0;  ///< per NIC, one direction
  std::vector<std::string> profiles;            ///< stems of the shipped profiles of its GPU
  /// What prices a scenario on it that leaves cost_model out: the stem of its GPU's public
  /// profile (default_cost_model), or "roofline" when none ships.
  std::string default_cost_model;
  bool operator==(const ShippedSystem&) const = default;
};

/// Every system file under scenarios_dir/systems, by name, with its GPU's shipped profiles;
/// the problems of the files that do not load.
Result<std::vector<ShippedSystem>> shipped_systems(const std::string& scenarios_dir);

/// `stepsim systems --format json` (and stepsim.systems() in Python): an array of one object
/// per system, keyed like ShippedSystem's members, ending in a newline.
std::string shipped_systems_json(const std::vector<ShippedSystem>& rows);

}  // namespace stepsim
