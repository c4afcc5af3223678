#pragma once
// Heterogeneous GPUs and links for one simulated step: the compute scale of stragglers and
// jitter, the NIC capacity of slow nodes, checked against the job (errors name the flag:
// --straggler, --jitter, --slow-nic).

#include <cstdint>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

/// `options` with the scenario's `heterogeneity` section added: its full_rank, its stragglers
/// and slow NICs before the options' own, its jitter (and seed) unless the options give one.
SimulateOptions with_heterogeneity(const Workload& w, const SimulateOptions& options);

/// Representative mode: per pipeline stage, how much longer its compute takes with
/// `stragglers` (see SimulateOptions::stragglers; all in one data-parallel replica).
Result<std::vector<double>> straggler_scale(const Workload& w,
                                            const std::vector<Straggler>& stragglers);

/// Full-rank: per global rank, how much longer its compute takes: its straggler factor (the
/// largest given for it; any rank may be one) times its jitter draw (jitter_scales).
Result<std::vector<double>> gpu_compute_scales(const Workload& w, const SimulateOptions& o);

/// Full-rank: per global rank, its NIC's bandwidth as a share of the system file's (1 / the
/// --slow-nic factor of its node); empty without slow NICs.
Result<std::vector<double>> nic_capacities(const Workload& w, const SimulateOptions& o);

/// Per-rank jitter: rank r's compute scale exp(sigma * z_r), lognormal with median 1, z_r a
/// standard normal drawn by Box-Muller from std::mt19937_64(seed): for r = 0, 1, ... two
/// 64-bit outputs a, b, u1 = (a >> 11) * 2^-53, u2 = (b >> 11) * 2^-53,
/// z = sqrt(-2 ln(1 - u1)) * cos(2 pi u2). Implemented here (not std::normal_distribution,
/// whose draws differ between standard libraries), so a seed gives the same factors anywhere.
std::vector<double> jitter_scales(std::int64_t ranks, double sigma, std::uint64_t seed);

/// `count` standard normals drawn as jitter_scales draws them (z_r above).
std::vector<double> standard_normals(std::int64_t count, std::uint64_t seed);

/// Full-rank, with a measured kernel spread (stepsim/cost/spread.hpp): every rank's compute
/// scale in `scale` times 1 + relative_sd[its stage] x z, z one standard normal per
/// data-parallel replica and stage (the ranks that run one action together, its tensor- and
/// context-parallel peers, already wait for their slowest inside it), drawn from `seed`
/// (offset from the jitter's stream). The step's replicas then reach their gradient
/// reduction as far apart as the draws say, and the simulation waits for the latest.
void apply_replica_draws(const Workload& w, const std::vector<double>& relative_sd,
                         std::uint64_t seed, std::vector<double>& scale);

}  // namespace stepsim::sim
