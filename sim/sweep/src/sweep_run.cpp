// The sweep's thread pool. Workers take small batches of configurations from one shared
// enumerator, evaluate them without holding the lock, and put the rows back into a window
// ordered by enumeration index; whoever completes the front of the window feeds the sinks.
// So the sinks see rows in enumeration order whatever the number of jobs, and after a
// cancel every row handed out is still finished and fed (the output is a clean prefix).

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "stepsim/check/check.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {
namespace {

constexpr std::size_t kBatch = 4;
// Batches each worker may run ahead of the oldest unfinished one: bounds the window (memory,
// a few KiB per row) when one configuration is slow. Simulation costs differ by 100x between
// neighbours (thousands of micro-batches next to pruned rows), so a short window starves the
// other workers: with 4 batches per job, 2 jobs ran Turing-530B's space only 1.0-1.4x faster
// than 1 job; with 64, 1.6x.
constexpr std::size_t kWindowBatchesPerJob = 64;

struct Slot {
  enum class State : std::uint8_t { kPending, kReady, kSkip };
  State state = State::kPending;
  SweepRow row;
  Workload workload;
};

class Runner {
 public:
  Runner(const SweepSpec& spec, const SweepEvaluator& evaluator, const SweepRunOptions& options,
         std::vector<SweepSink*> sinks)
      : evaluator_(evaluator), options_(options), sinks_(std::move(sinks)), enumerator_(spec) {}

  Result<SweepRunStats> run() {
    const int jobs = std::max(1, options_.jobs);
    max_window_ = kBatch * kWindowBatchesPerJob * static_cast<std::size_t>(jobs);
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(jobs - 1));
    for (int j = 1; j < jobs; ++j) threads.emplace_back([this] { work(); });
    work();
    for (std::thread& t : threads) t.join();
    if (error_.message.empty() && !stats_.cancelled && known_next_ < options_.known.size()) {
      error_ = Error{"", "",
                     "row " + std::to_string(options_.known[known_next_].index) +
                         " is not in this sweep's enumeration"};
    }
    if (!error_.message.empty()) return error_;
    return stats_;
  }

 private:
  bool cancelled() const {
    return options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed);
  }

  // Under lock: hands out up to kBatch configurations to evaluate; known rows and other
  // ranks' rows are settled in place.
  std::vector<SweepConfig> take(std::unique_lock<std::mutex>& lock) {
    // The front slot is another worker's: wait for it rather than run far ahead.
    window_shrunk_.wait(lock,
                        [this] { return window_.size() < max_window_ || !error_.message.empty(); });
    std::vector<SweepConfig> out;
    while (out.size() < kBatch && window_.size() < max_window_ && !exhausted_ &&
           error_.message.empty()) {
      if (cancelled()) {
        stats_.cancelled = true;
        break;
      }
      SweepConfig c;
      if (!enumerator_.next(c)) {
        exhausted_ = true;
        break;
      }
      ++stats_.enumerated;
      Slot& slot = window_.emplace_back();
      while (known_next_ < options_.known.size() && options_.known[known_next_].index < c.index) {
        ++known_next_;  // a known row outside the enumeration: reported below
        error_ = Error{"", "",
                       "known row " + std::to_string(options_.known[known_next_ - 1].index) +
                           " is not in this sweep's enumeration"};
      }
      if (known_next_ < options_.known.size() && options_.known[known_next_].index == c.index) {
        const SweepRow& known = options_.known[known_next_++];
        // Finalized like an evaluated one, so that its knob columns can be compared.
        static_cast<void>(finalize_workload(c.workload, ""));
        if (known.knobs != evaluator_.knob_values(c.workload)) {
          error_ = Error{"", "",
                         "row " + std::to_string(c.index) +
                             " has other knob values than this sweep's configuration " +
                             std::to_string(c.index) + " (is it from another sweep?)"};
        }
        slot.state = Slot::State::kReady;
        slot.row = known;
        slot.workload = std::move(c.workload);
        continue;
      }
      if (c.index % options_.ranks != options_.rank) {
        slot.state = Slot::State::kSkip;
        continue;
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // Under lock: feeds the ready front of the window to the sinks.
  void drain() {
    while (!window_.empty() && window_.front().state != Slot::State::kPending) {
      Slot& s = window_.front();
      if (s.state == Slot::State::kReady) {
        for (SweepSink* sink : sinks_) sink->add(s.row, s.workload);
        ++stats_.fed;
        if (options_.progress) options_.progress(stats_.fed);
      }
      window_.pop_front();
      ++window_base_;
    }
    window_shrunk_.notify_all();
  }

  void work() {
    const std::vector<CostMemo> memos = evaluator_.cost_memos();  // this worker's own
    std::unique_lock lock(mutex_);
    for (;;) {
      std::vector<SweepConfig> batch = take(lock);
      drain();
      if (batch.empty()) {
        if (exhausted_ || stats_.cancelled || !error_.message.empty()) return;
        continue;  // only known or other ranks' rows this time
      }
      lock.unlock();
      std::vector<SweepRow> rows;
      rows.reserve(batch.size());
      for (SweepConfig& c : batch) rows.push_back(evaluator_.evaluate(c, memos));
      lock.lock();
      for (std::size_t i = 0; i < batch.size(); ++i) {
        Slot& slot = window_[static_cast<std::size_t>(batch[i].index - window_base_)];
        slot.state = Slot::State::kReady;
        slot.row = std::move(rows[i]);
        slot.workload = std::move(batch[i].workload);
        ++stats_.evaluated;
      }
      drain();
    }
  }

  const SweepEvaluator& evaluator_;
  const SweepRunOptions& options_;
  std::vector<SweepSink*> sinks_;
  std::mutex mutex_;
  std::condition_variable window_shrunk_;
  std::size_t max_window_ = 0;
  SweepEnumerator enumerator_;
  std::deque<Slot> window_;
  std::int64_t window_base_ = 0;  // enumeration index of window_.front()
  std::size_t known_next_ = 0;
  bool exhausted_ = false;
  Error error_;
  SweepRunStats stats_;
};

}  // namespace

Result<SweepRunStats> run_sweep(const SweepSpec& spec, const SweepEvaluator& evaluator,
                                const SweepRunOptions& options, std::vector<SweepSink*> sinks) {
  STEPSIM_ASSERT(options.ranks >= 1 && options.rank >= 0 && options.rank < options.ranks);
  Runner runner(spec, evaluator, options, std::move(sinks));
  return runner.run();
}

}  // namespace stepsim::sim
