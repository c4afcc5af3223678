// The scenario schema's rows for the top level and heterogeneity (see schema.hpp;
// rows.hpp has the macros).

#include <limits>

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
    // ---- the top level ----
    KeyInfo{.key = "name",
            .kind = KnobKind::kString,
            .required = true,
            .default_text = "must be given",
            .check = "non-empty",
            .doc = "short id used in reports"},
    KeyInfo{.key = "description",
            .kind = KnobKind::kString,
            .default_text = "none",
            .check = "one line",
            .doc = "one sentence a person reads: what the job is"},
    KeyInfo{.key = "sources",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"DOTTED.KEY\": \"citation\", ...}: each key given in this file",
            .doc = "where each value comes from and why, keyed by the dotted key it justifies "
                   "(\"training.fp8\"), a section (\"model\") or \"name\" for the whole job; "
                   "every shipped scenario has it"},
    // The system file itself: in a sweep its value indexes SweepSpec::systems; the enumerator
    // swaps the whole SystemConfig, set/get only carry the index through.
    KeyInfo{.key = "system",
            .kind = KnobKind::kSystem,
            .set = [](Workload&, const KnobValue&) {},
            .get = [](const Workload&) { return KnobValue{}; },
            .required = true,
            .sweep = Sweep::kListed,
            .default_text = "must be given",
            .check = "a system file (next to the scenario, then under scenarios/) or an object",
            .doc = "the cluster: a system file path or an inline system object"},
    KeyInfo{.key = "cost_model",
            .kind = KnobKind::kString,
            .default_text = "the shipped public profile of the system's GPU "
                            "(scenarios/profiles/<gpu>-public.json), \"roofline\" when none "
                            "ships; the reports say which",
            .check = "\"roofline\" or {\"profile\": \"<path>\"}",
            .doc = "the roofline model of the system file, or a calibration profile"},
    KeyInfo{.key = "unmodelled",
            .kind = KnobKind::kString,
            .default_text = "[]",
            .check = "a list of strings",
            .doc = "job-changing launch-line flags stepsim left out (import-megatron "
                   "--allow-unmodelled): every report then warns that it predicts another job"},
    // ---- heterogeneity (read by hand in load.cpp; predict's flags add to it) ----
    KeyInfo{.key = "heterogeneity.full_rank",
            .kind = KnobKind::kBool,
            .default_text = "false",
            .doc = "simulate every GPU (each TP, CP peer and DP replica, collectives over their "
                   "real members) instead of one representative rank per stage (predict "
                   "--full-rank)"},
    KeyInfo{.key = "heterogeneity.stragglers",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"RANK\": FACTOR, ...}: global ranks of the job, factors in [0.001, 1000]; "
                     "ranks in several data-parallel replicas need full_rank",
            .doc = "GPUs whose compute kernels take FACTOR times as long (predict --straggler "
                   "adds more)"},
    KeyInfo{.key = "heterogeneity.slow_nics",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"NODE\": FACTOR, ...}: nodes of the job (global rank / gpus_per_node), "
                     "factors in [0.001, 1000]; needs full_rank",
            .doc = "nodes whose NIC rails move bytes FACTOR times as slowly (predict --slow-nic "
                   "adds more)"},
    KeyInfo{.key = "heterogeneity.jitter_sigma",
            .kind = KnobKind::kReal,
            .default_text = "0",
            .check = "in [0, 1]; > 0 needs full_rank",
            .doc = "each GPU's kernels take exp(sigma * z) times as long, z a standard normal "
                   "drawn per global rank (lognormal, median 1; predict --jitter replaces it)"},
    KeyInfo{.key = "heterogeneity.jitter_seed",
            .kind = KnobKind::kInt,
            .default_text = "0",
            .check = ">= 0",
            .doc = "seed of the jitter's draws (std::mt19937_64, Box-Muller; predict --seed "
                   "with --jitter)", .zero_allowed = true,
            .int_max = std::numeric_limits<std::int64_t>::max(),
            .int_max_why = "int64: a std::mt19937_64 seed takes any"},

};

}  // namespace

std::span<const KeyInfo> top_keys() { return kRows; }

}  // namespace stepsim::schema_rows
