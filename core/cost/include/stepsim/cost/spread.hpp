#pragma once
// What the spread of kernel times costs at a synchronisation ("scale is not free"): every
// member of a synchronising collective waits for the slowest. The model (docs/models.md,
// "Spread at synchronisations"): each kernel's time on each rank is its cost-model time plus
// an independent normal deviation of standard deviation cv x time (the profile's
// KernelSpread, per kernel class); the stretch of work a rank runs between two
// synchronisations then deviates by a normal of variance sum (cv_k t_k)^2, and a group of N
// ranks leaves the synchronisation when its slowest arrives: after the mean by
// sigma x E[max of N standard normals] (the expected largest order statistic; David &
// Nagaraja, "Order Statistics", 3rd ed., 2003, eq. 3.1.1 for its density).

#include <cstdint>

#include "stepsim/cost/profile.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim {

/// E[max of n independent standard normals], by integrating x n phi(x) Phi(x)^(n-1) over x
/// (the density of the largest of n; trapezoid rule on [-12, 12], step 1/512). 0 for n <= 1.
double expected_max_std_normal(std::int64_t n);

/// Var[max of n independent standard normals], the same way (1 for n <= 1).
double variance_max_std_normal(std::int64_t n);

/// The coefficient of variation of `op`'s time by its kernel class (0: no spread measured,
/// or an op without a class: host work, delays).
double spread_cv(const KernelSpread& s, const Op& op);

/// The expected wait of a rank at a synchronisation of `group_size` ranks after a stretch
/// whose time deviates with standard deviation `sigma_s`: sigma_s x E[max of group_size].
double sync_wait_s(std::int64_t group_size, double sigma_s);

}  // namespace stepsim
