#pragma once
// A watchdog thread for the executor: when the rank makes no progress for `timeout_s`, it
// calls `on_fire` once (which reports to the executor's caller); internal to the calibration
// library.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace stepsim::calib::detail {

class Watchdog {
 public:
  /// `on_fire(step, task, idle_s)` runs on the watchdog thread, at most once.
  Watchdog(double timeout_s, std::function<void(std::int32_t, std::int64_t, double)> on_fire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// The rank is now in task `task` of step `step` (negative tasks: between tasks).
  void enter(std::int32_t step, std::int64_t task);

 private:
  void run();
  static std::int64_t now_ns();

  double timeout_s_;
  std::function<void(std::int32_t, std::int64_t, double)> on_fire_;
  std::atomic<std::int64_t> last_progress_ns_;
  std::atomic<std::int32_t> step_{0};
  std::atomic<std::int64_t> task_{-1};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stepsim::calib::detail
