#include "stepsim/schedule/schedule_cache.hpp"

#include <algorithm>

namespace stepsim::sim {

Result<std::shared_ptr<const Schedule>> ScheduleCache::get(const ScheduleParams& params) {
  {
    std::lock_guard lock(mutex_);
    for (Entry& e : entries_) {
      if (e.params == params) {
        e.last_use = ++clock_;
        return e.schedule;
      }
    }
  }
  // Built outside the lock: two threads may build the same schedule once each, which costs
  // less than making every other thread wait.
  Result<Schedule> made = make_schedule(params);
  if (!made.ok()) return made.errors();
  auto schedule = std::make_shared<const Schedule>(std::move(made).value());
  std::lock_guard lock(mutex_);
  if (entries_.size() >= capacity_) {
    const auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                         [](const Entry& a, const Entry& b) {
                                           return a.last_use < b.last_use;
                                         });
    entries_.erase(oldest);
  }
  entries_.push_back(Entry{params, schedule, ++clock_});
  return schedule;
}

}  // namespace stepsim::sim
