#pragma once
// ScheduleCache: shares built schedules between simulations with equal schedule parameters
// (a sweep's configurations that differ only in recompute, sequence parallelism, optimizer
// or system share one). Thread-safe; keeps the most recently used few, since one schedule
// of a deep pipeline with many micro-batches takes tens of MiB.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim {

class ScheduleCache {
 public:
  explicit ScheduleCache(std::size_t capacity = 8) : capacity_(capacity) {}

  /// The schedule for `params`, built on first use.
  Result<std::shared_ptr<const Schedule>> get(const ScheduleParams& params);

 private:
  struct Entry {
    ScheduleParams params;
    std::shared_ptr<const Schedule> schedule;
    std::uint64_t last_use = 0;
  };
  std::size_t capacity_;
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
};

}  // namespace stepsim::sim
