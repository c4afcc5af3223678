#include "watchdog.hpp"

#include <algorithm>
#include <utility>

namespace stepsim::calib::detail {

Watchdog::Watchdog(double timeout_s,
                   std::function<void(std::int32_t, std::int64_t, double)> on_fire)
    : timeout_s_(timeout_s), on_fire_(std::move(on_fire)), last_progress_ns_(now_ns()) {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

void Watchdog::enter(std::int32_t step, std::int64_t task) {
  step_.store(step);
  task_.store(task);
  last_progress_ns_.store(now_ns());
}

std::int64_t Watchdog::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Watchdog::run() {
  // Poll often enough that a fault is reported well within a second of the timeout.
  const auto period = std::chrono::milliseconds(std::clamp(
      static_cast<std::int64_t>(timeout_s_ * 100.0), std::int64_t{10}, std::int64_t{200}));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
    const double idle_s = static_cast<double>(now_ns() - last_progress_ns_.load()) * 1e-9;
    if (idle_s < timeout_s_) continue;
    lock.unlock();
    on_fire_(step_.load(), task_.load(), idle_s);
    return;
  }
}

}  // namespace stepsim::calib::detail
