#pragma once
// The calibration runner: measures a list of points on a Backend (every rank runs the same
// list in the same order), journals each result at rank 0 as it comes, resumes from an
// existing journal, and at the end builds the Profile (samples + fits).

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// Reports progress while points are measured (rank 0 only).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  /// `done` of `total` points finished; `last` is the key of the point just measured.
  virtual void update(std::int64_t done, std::int64_t total, const std::string& last) = 0;
  virtual void finish() = 0;
};

/// Writes a progress bar with ETA (terminal: redrawn in place) or, when `out` is not a
/// terminal, one line every `line_every_s` seconds.
class StreamProgress final : public ProgressSink {
 public:
  /// Lines start with `label` ("calibrate: 3/40 (8%) elapsed 0:12 ETA 2:28").
  StreamProgress(std::ostream& out, bool terminal, double line_every_s = 10.0,
                 std::string label = "calibrate");
  void update(std::int64_t done, std::int64_t total, const std::string& last) override;
  void finish() override;

 private:
  std::ostream& out_;
  bool terminal_;
  double line_every_s_;
  std::string label_;
  double start_s_;
  double last_line_s_;
  std::int64_t first_done_ = -1;  ///< points already done at the first update (resumed)
};

struct CalibrationOptions {
  std::string journal_path;        ///< JSON lines, rank 0 appends; empty: no journal
  std::vector<std::string> notes;  ///< copied into the profile
  /// Testing aid: stop (as if interrupted) after measuring this many new points; -1: never.
  std::int64_t stop_after = -1;
  /// After the points, the interference microbenchmark (a GEMM beside a collective and the
  /// collective beside GEMMs) where the backend runs collectives beside its caller and there
  /// are two or more ranks: the profile's "interference".
  bool interference = true;
};

struct CalibrationRun {
  Profile profile;            ///< complete only on rank 0 and when `complete`
  std::int64_t total = 0;     ///< points in the plan
  std::int64_t resumed = 0;   ///< taken from the journal
  std::int64_t measured = 0;  ///< measured in this run
  bool complete = false;      ///< every point measured (not stopped by stop_after)
  double wall_s = 0.0;
};

/// Measures `points` (collective over the world: every rank calls it with the same list).
/// `progress` may be null (other ranks). Errors: a failed or wrong measurement on any rank,
/// an unreadable or foreign journal.
Result<CalibrationRun> run_calibration(Backend& backend, const std::vector<BenchPoint>& points,
                                       const CalibrationOptions& options, ProgressSink* progress);

/// Rounds of one calibration (the same points in the same order) combined: each sample's
/// median over the rounds (the mean of the middle two for an even count), fits redone; the
/// rest is the first round's.
Profile median_profile(const std::vector<Profile>& rounds);

struct PlanCalibrationOptions {
  int cpu_threads = 1;  ///< Eigen threads per rank (cpu)
  /// Passes over the points; each sample of the profile is the point's median over them.
  int rounds = 1;
  /// Called on every rank after each round with its number (from 0) and the profile of the
  /// rounds so far: where `validate` predicts and runs a share of its measured steps, so that
  /// calibration and measurement sample the machine over the same stretch of time. May be
  /// empty.
  std::function<Status(int round, const Profile& so_far)> after_round;
};

/// Calibrates for one decomposed scenario inside the calling process: its exact op shapes,
/// plus the quick generic memory and communication grids so that every fit has several sizes
/// (not the generic GEMM and attention grids), measured with calibration settings (fresh
/// operands, checked results, median of repeats, the last-level cache flushed before each
/// GEMM and attention repeat and the ranks starting each repeat together) on a backend
/// of its own. `validate --calibrate` runs it interleaved with the measured steps, so that
/// profile and measurement see the machine in the same state (on a shared machine its speed
/// drifts over seconds). Collective over the world; every rank returns the same fitted
/// profile (the last one `after_round` saw). Errors: a failed measurement, or the first
/// error `after_round` returns.
Result<Profile> calibrate_for_plan(const std::string& backend_name, const WorkloadPlan& plan,
                                   const PlanCalibrationOptions& options);

/// The summary table: peak GEMM TFLOP/s reached, memory bandwidth, bus bandwidth per
/// collective, group size and span (largest message), point-to-point bandwidth.
void write_summary(std::ostream& out, const Profile& profile);

/// nccl-tests bus bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for the others.
double bus_bandwidth_factor(CollectiveKind kind, std::int64_t group_size);

}  // namespace stepsim::calib
