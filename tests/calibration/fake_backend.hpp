#pragma once
// FakeBackend: a calib::Backend test double for one process that plays world rank `rank` of
// `world`. Nothing is computed or sent: every call advances a virtual clock by a
// deterministic duration (from the op's size) and is logged, so tests can check what the
// executor issued and in which order. Collectives and P2P complete at once (no peers).

#include <map>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/validator/executor.hpp"

namespace stepsim::calib::testing {

class FakeBackend final : public Backend {
 public:
  /// `split_sizes[i]`: size of the group returned by the i-th split() call (the executor
  /// splits tensor, data, then embedding groups); missing entries give size 1.
  FakeBackend(std::int32_t rank, std::int32_t world, std::vector<std::int32_t> split_sizes)
      : rank_(rank), world_(world), split_sizes_(std::move(split_sizes)) {}

  std::string name() const override { return "fake"; }
  std::string device_name() const override { return "fake device"; }
  std::int32_t world_rank() const override { return rank_; }
  std::int32_t world_size() const override { return world_; }

  Result<GroupId> split(std::int32_t color, std::int32_t key, const CommOptions& options) override {
    if (options != CommOptions{}) {
      log_.push_back("split options min_ctas=" + std::to_string(options.min_ctas) +
                     " max_ctas=" + std::to_string(options.max_ctas));
    }
    const std::size_t i = sizes_.size();
    sizes_.push_back(i < split_sizes_.size() ? split_sizes_[i] : 1);
    log_.push_back("split color=" + std::to_string(color) + " key=" + std::to_string(key));
    return GroupId{static_cast<std::int32_t>(i + 1)};
  }
  std::int32_t group_size(GroupId g) const override {
    if (g.value == 0) return world_;
    return sizes_.at(static_cast<std::size_t>(g.value - 1));
  }

  /// 1 ns per 1000 FLOPs (1 TFLOP/s) plus 1 us.
  Result<double> gemm(const GemmOp& op) override {
    return advance(
        "gemm " + std::to_string(op.m) + "x" + std::to_string(op.n) + "x" + std::to_string(op.k),
        1e-6 + op.flops() * 1e-12);
  }
  Result<double> attention(const AttentionOp& op) override {
    return advance(std::string("attention") + (op.backward ? " bwd" : " fwd"),
                   1e-6 + op.flops() * 1e-12);
  }
  Result<double> memory_bound(const MemoryBoundOp& op) override {
    return advance("memory " + std::to_string(op.bytes),
                   1e-6 + static_cast<double>(op.bytes) * 1e-10);
  }
  Result<double> collective(const CollectiveOp& op, GroupId group) override {
    return advance("collective " + std::string(to_string(op.kind)) + " group=" +
                       std::to_string(group.value) + " bytes=" + std::to_string(op.bytes),
                   1e-5 + static_cast<double>(op.bytes) * 1e-9);
  }
  Result<double> p2p(const std::vector<P2PRequest>& requests) override {
    std::ostringstream s;
    s << "p2p";
    std::int64_t bytes = 0;
    for (const auto& r : requests) {
      s << (r.send ? " send>" : " recv<") << r.peer << " tag=" << r.tag << " bytes=" << r.bytes;
      bytes += r.bytes;
    }
    p2p_calls_.push_back(requests);
    return advance(s.str(), 1e-5 + static_cast<double>(bytes) * 1e-9);
  }
  /// Stream mode (deferred = true), as the CUDA backend runs for the validator: a call costs
  /// the host `issue_s` and returns 0; its duration runs on a device clock that starts when
  /// the host issues it or when the device's previous call ends, whichever is later.
  bool deferred_timing() const override { return deferred; }
  Status begin_step() override {
    device_s_ = clock_s_;
    pending_.clear();
    return ok_status();
  }
  void tag(std::int64_t task) override { task_ = task; }
  Result<std::vector<DeviceTiming>> end_step() override {
    std::vector<DeviceTiming> out;
    for (const DeviceTiming& t : pending_) {
      if (!out.empty() && out.back().task == t.task) {
        out.back().end_s = t.end_s;
        out.back().busy_s += t.busy_s;
      } else {
        out.push_back(t);
      }
    }
    clock_s_ = std::max(clock_s_, device_s_);  // the host waits for the device
    pending_.clear();
    return out;
  }
  bool deferred = false;
  double issue_s = 1e-7;

  Result<double> barrier(GroupId) override {
    if (on_barrier) on_barrier();
    return 0.0;
  }
  double now_s() const override { return clock_s_; }
  Result<double> align_clocks() override { return 0.0; }
  Result<std::vector<std::vector<double>>> gather_to_root(
      const std::vector<double>& values) override {
    // Rank 0 sees every rank report what it measured itself.
    if (rank_ != 0) return std::vector<std::vector<double>>{};
    return std::vector<std::vector<double>>(static_cast<std::size_t>(world_), values);
  }

  /// Every compute/communication call, in order ("gemm 128x768x256", "p2p send>1 ...").
  const std::vector<std::string>& log() const { return log_; }
  const std::vector<std::vector<P2PRequest>>& p2p_calls() const { return p2p_calls_; }
  /// Called at each barrier (the executor starts every step with one); may be empty.
  std::function<void()> on_barrier;
  /// What last_spread() says after a call whose log entry starts with the key ("gemm",
  /// "memory", "collective"...); not observed otherwise.
  std::map<std::string, RepeatSpread> spread_by_kind;
  RepeatSpread last_spread() const override {
    for (const auto& [kind, spread] : spread_by_kind) {
      if (!log_.empty() && log_.back().rfind(kind, 0) == 0) return spread;
    }
    return {};
  }

 private:
  Result<double> advance(std::string entry, double seconds) {
    log_.push_back(std::move(entry));
    if (deferred) {
      clock_s_ += issue_s;
      const double start = std::max(device_s_, clock_s_);
      device_s_ = start + seconds;
      pending_.push_back(
          DeviceTiming{.task = task_, .start_s = start, .end_s = device_s_, .busy_s = seconds});
      return 0.0;
    }
    clock_s_ += seconds;
    return seconds;
  }

  std::int32_t rank_;
  std::int32_t world_;
  std::vector<std::int32_t> split_sizes_;
  std::vector<std::int32_t> sizes_;
  std::vector<std::string> log_;
  std::vector<std::vector<P2PRequest>> p2p_calls_;
  double clock_s_ = 0;
  double device_s_ = 0;
  std::int64_t task_ = 0;
  std::vector<DeviceTiming> pending_;
};

/// The sizes of the groups the executor splits off for world rank `rank` of layout `l`, in
/// the order it splits them (FakeBackend's `split_sizes`).
inline std::vector<std::int32_t> split_sizes(const RankLayout& l, std::int32_t rank) {
  const auto c = l.coord_of(rank);
  const bool embedding = l.pp > 1 && (c.pp == 0 || c.pp == l.pp - 1);
  std::vector<std::int32_t> out{l.tp, l.dp * l.cp, embedding ? 2 : 1};
  if (l.cp > 1) out.push_back(l.cp);
  if (l.cp_a2a > 1) out.push_back(l.cp_a2a);
  if (l.moe) {
    // The expert groups: EP, expert TP, expert TP x EP, expert DP.
    for (const std::int32_t n :
         {l.ep, l.etp, l.etp * l.ep, l.world_size() / (l.pp * l.ep * l.etp)}) {
      out.push_back(n);
    }
  }
  // The amax-reduction group (with CP also its tensor x context variant, tp_only_amax_red),
  // then (without the distributed optimizer) the model-parallel group over which the
  // gradient norm is summed.
  out.push_back(l.tp * l.dp * l.cp);
  if (l.cp > 1) out.push_back(l.tp * l.cp);
  out.push_back(l.tp * l.pp);
  return out;
}

}  // namespace stepsim::calib::testing
