// What a sweep's configurations cost: dollars per million tokens at the sweep's price of a
// GPU-hour, and the time and dollars of a training run of train_tokens (whole steps).

#include <algorithm>
#include <charconv>
#include <cmath>

#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {

SweepPricing sweep_pricing(const SweepSpec& spec) {
  SweepPricing p;
  p.price_per_gpu_hour = spec.price_per_gpu_hour;
  p.train_tokens = spec.train_tokens;
  const std::vector<std::string> columns = sweep_columns(spec);
  const auto world = std::find(columns.begin(), columns.end(), "training.world_size");
  STEPSIM_ASSERT(world != columns.end());
  p.world_column = static_cast<std::size_t>(world - columns.begin());
  return p;
}

std::int64_t row_world_size(const SweepRow& row, const SweepPricing& pricing) {
  std::int64_t gpus = 0;
  if (pricing.world_column < row.knobs.size()) {
    const std::string& s = row.knobs[pricing.world_column];
    std::from_chars(s.data(), s.data() + s.size(), gpus);
  }
  return gpus;
}

RowCost row_cost(const SweepRow& row, const SweepPricing& pricing) {
  RowCost c;
  const SweepMetrics& m = row.metrics;
  if (!row.simulated || !(m.tokens_per_s > 0) || !(m.step_time_s > 0)) return c;
  const auto gpus = static_cast<double>(row_world_size(row, pricing));
  if (pricing.price_per_gpu_hour > 0) {
    c.priced = true;
    c.usd_per_million_tokens = gpus * pricing.price_per_gpu_hour / 3600.0 / m.tokens_per_s * 1e6;
  }
  if (pricing.train_tokens > 0) {
    const auto per_step = std::max<std::int64_t>(1, std::llround(m.tokens_per_s * m.step_time_s));
    const std::int64_t steps =
        pricing.train_tokens / per_step + (pricing.train_tokens % per_step != 0 ? 1 : 0);
    c.trained = true;
    c.train_time_s = static_cast<double>(steps) * m.step_time_s;
    c.train_usd = gpus * c.train_time_s / 3600.0 * pricing.price_per_gpu_hour;
  }
  return c;
}

}  // namespace stepsim::sim
