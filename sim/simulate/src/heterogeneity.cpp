#include "stepsim/simulate/heterogeneity.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/rank_layout.hpp"

namespace stepsim::sim {

namespace {

/// The error of a straggler outside the job or with a factor out of range, if any.
std::optional<Error> bad_straggler(const Workload& w, const Straggler& s) {
  const std::int64_t world = w.training.world_size;
  std::ostringstream factor;
  factor << s.factor;
  const std::string what = " " + std::to_string(s.rank) + "=" + factor.str();
  if (s.rank < 0 || s.rank >= world) {
    return Error{"", "--straggler",
                 what + ": rank " + std::to_string(s.rank) + " is not in the world of " +
                     std::to_string(world) + " GPUs"};
  }
  // A GPU a thousand times slower (or faster) than its peers is not a straggler but another
  // machine; the bound also keeps every duration finite.
  if (!(s.factor >= 1e-3 && s.factor <= 1e3)) {
    return Error{"", "--straggler", what + ": the factor must lie in [0.001, 1000]"};
  }
  return std::nullopt;
}

RankGenerator layout_of(const Workload& w) {
  // Megatron's rank layout, the one RankGenerator (core/rank_layout.hpp).
  const TrainingConfig& t = w.training;
  return RankGenerator(ParallelSizes{.tp = t.tensor_model_parallel_size,
                                     .cp = t.context_parallel_size,
                                     .dp = std::max<std::int64_t>(1, t.data_parallel_size),
                                     .pp = t.pipeline_model_parallel_size});
}

}  // namespace

/// Per pipeline stage, how much longer its compute takes with `stragglers` (see
/// SimulateOptions::stragglers); errors name --straggler.
Result<std::vector<double>> straggler_scale(const Workload& w,
                                            const std::vector<Straggler>& stragglers) {
  const TrainingConfig& t = w.training;
  const RankGenerator layout = layout_of(w);
  STEPSIM_ASSERT(layout.world_size() == t.world_size);
  std::vector<double> scale(static_cast<std::size_t>(t.pipeline_model_parallel_size), 1.0);
  std::int64_t replica = -1;
  for (const Straggler& s : stragglers) {
    if (std::optional<Error> bad = bad_straggler(w, s)) return *bad;
    const ParallelCoords at = layout.coords(s.rank);
    const std::int64_t dp_index = at.dp;
    if (replica >= 0 && dp_index != replica) {
      std::ostringstream factor;
      factor << s.factor;
      return Error{"", "--straggler",
                   " " + std::to_string(s.rank) + "=" + factor.str() +
                       ": stragglers in different data-parallel replicas (" +
                       std::to_string(replica) + " and " + std::to_string(dp_index) +
                       ") need every GPU simulated: add --full-rank"};
    }
    replica = dp_index;
    double& f = scale[static_cast<std::size_t>(at.pp)];
    f = std::max(f, s.factor);
  }
  return scale;
}

/// Full-rank: per global rank, how much longer its compute takes: its straggler factor (the
/// largest given for it; any rank may be one) times its jitter draw.
Result<std::vector<double>> gpu_compute_scales(const Workload& w, const SimulateOptions& o) {
  const std::int64_t world = w.training.world_size;
  if (!(o.jitter_sigma >= 0 && o.jitter_sigma <= 1)) {
    std::ostringstream sigma;
    sigma << o.jitter_sigma;
    return Error{"", "--jitter",
                 " " + sigma.str() +
                     ": SIGMA, the standard deviation of ln(compute factor), must lie in [0, 1]"};
  }
  std::vector<double> scale = o.jitter_sigma > 0 ? jitter_scales(world, o.jitter_sigma, o.seed)
                                                 : std::vector<double>(static_cast<std::size_t>(world), 1.0);
  std::vector<double> straggler(scale.size(), 0.0);
  for (const Straggler& s : o.stragglers) {
    if (std::optional<Error> bad = bad_straggler(w, s)) return *bad;
    double& f = straggler[static_cast<std::size_t>(s.rank)];
    f = std::max(f, s.factor);
  }
  for (std::size_t r = 0; r < scale.size(); ++r) {
    if (straggler[r] > 0) scale[r] *= straggler[r];
  }
  return scale;
}

/// Full-rank: per global rank, its NIC's bandwidth as a share of the system file's (1 / the
/// --slow-nic factor of its node); errors name --slow-nic.
Result<std::vector<double>> nic_capacities(const Workload& w, const SimulateOptions& o) {
  const std::int64_t world = w.training.world_size;
  const std::int64_t per_node = std::max<std::int64_t>(1, w.system.gpus_per_node);
  const std::int64_t nodes = (world + per_node - 1) / per_node;
  std::vector<double> capacity;
  for (const SlowNic& s : o.slow_nics) {
    std::ostringstream factor;
    factor << s.factor;
    const std::string what = " " + std::to_string(s.node) + "=" + factor.str();
    if (s.node < 0 || s.node >= nodes) {
      return Error{"", "--slow-nic",
                   what + ": node " + std::to_string(s.node) + " is not one of the job's " +
                       std::to_string(nodes) + " nodes (global rank / gpus_per_node " +
                       std::to_string(per_node) + ")"};
    }
    if (!(s.factor >= 1e-3 && s.factor <= 1e3)) {
      return Error{"", "--slow-nic", what + ": the factor must lie in [0.001, 1000]"};
    }
    if (!o.contention) {
      return Error{"", "--slow-nic",
                   what + ": a slower NIC acts through the link model, which --no-contention "
                          "turns off"};
    }
    capacity.resize(static_cast<std::size_t>(world), 1.0);
    for (std::int64_t g = s.node * per_node; g < std::min(world, (s.node + 1) * per_node); ++g) {
      double& c = capacity[static_cast<std::size_t>(g)];
      c = std::min(c, 1.0 / s.factor);
    }
  }
  return capacity;
}

SimulateOptions with_heterogeneity(const Workload& w, const SimulateOptions& options) {
  const HeterogeneityConfig& h = w.heterogeneity;
  SimulateOptions out = options;
  out.full_rank = options.full_rank || h.full_rank;
  out.stragglers.clear();
  for (const auto& [rank, factor] : h.stragglers) {
    out.stragglers.push_back(Straggler{.rank = static_cast<std::int32_t>(rank), .factor = factor});
  }
  out.stragglers.insert(out.stragglers.end(), options.stragglers.begin(), options.stragglers.end());
  out.slow_nics.clear();
  for (const auto& [node, factor] : h.slow_nics) {
    out.slow_nics.push_back(SlowNic{.node = static_cast<std::int32_t>(node), .factor = factor});
  }
  out.slow_nics.insert(out.slow_nics.end(), options.slow_nics.begin(), options.slow_nics.end());
  // The scenario's jitter comes with its seed; without one, the options' seed stays (it also
  // draws the replicas' deviations of a measured kernel spread, apply_replica_draws).
  if (options.jitter_sigma == 0 && h.jitter_sigma != 0) {
    out.jitter_sigma = h.jitter_sigma;
    out.seed = static_cast<std::uint64_t>(h.jitter_seed);
  }
  return out;
}

std::vector<double> standard_normals(std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  constexpr double kUnit = 1.0 / 9007199254740992.0;  // 2^-53
  std::vector<double> out(static_cast<std::size_t>(count), 0.0);
  for (double& z : out) {
    const double u1 = static_cast<double>(gen() >> 11) * kUnit;
    const double u2 = static_cast<double>(gen() >> 11) * kUnit;
    z = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  return out;
}

std::vector<double> jitter_scales(std::int64_t ranks, double sigma, std::uint64_t seed) {
  std::vector<double> out = standard_normals(ranks, seed);
  for (double& f : out) f = std::exp(sigma * f);
  return out;
}

void apply_replica_draws(const Workload& w, const std::vector<double>& relative_sd,
                         std::uint64_t seed, std::vector<double>& scale) {
  const RankGenerator layout = layout_of(w);
  const std::int64_t dp = std::max<std::int64_t>(1, w.training.data_parallel_size);
  const std::int64_t pp = w.training.pipeline_model_parallel_size;
  // One draw per replica and stage, from a stream of its own (the jitter's seed, offset).
  const std::vector<double> z = standard_normals(dp * pp, seed ^ 0x9e3779b97f4a7c15ULL);
  for (std::size_t r = 0; r < scale.size(); ++r) {
    const ParallelCoords at = layout.coords(static_cast<std::int64_t>(r));
    const auto stage = static_cast<std::size_t>(at.pp);
    if (stage >= relative_sd.size() || relative_sd[stage] <= 0) continue;
    const double d = z[static_cast<std::size_t>(at.dp * pp + at.pp)];
    // A draw more than 20 sigma below the mean would stop time; none is that far in 2^64.
    scale[r] *= std::max(0.05, 1.0 + relative_sd[stage] * d);
  }
}

}  // namespace stepsim::sim
