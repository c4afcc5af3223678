#include "stepsim/calibration/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "bench_math.hpp"
#include "interference.hpp"
#include "stepsim/calibration/journal.hpp"
#include "stepsim/calibration/mpi_session.hpp"

namespace stepsim::calib {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

std::string iso_date_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32] = {};
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

using GroupKey = std::pair<std::int32_t, GroupLayout>;

/// Rank 0 reads the journal and tells every rank which points are done (one byte each,
/// after a status byte). Returns the measured seconds by key at rank 0.
Result<std::vector<std::uint8_t>> share_done_points(Backend& backend,
                                                    const std::vector<BenchPoint>& points,
                                                    const CalibrationOptions& options,
                                                    const JournalHeader& header,
                                                    std::map<std::string, double>& seconds) {
  std::vector<std::uint8_t> payload;
  Errors root_errors;
  if (backend.world_rank() == 0) {
    payload.assign(points.size() + 1, 0);
    if (!options.journal_path.empty()) {
      auto journal = read_journal(options.journal_path);
      if (!journal.ok()) {
        root_errors = journal.errors();
      } else if (journal.value().has_value()) {
        const JournalContents& j = *journal.value();
        if (!(j.header == header)) {
          root_errors.push_back(
              Error{options.journal_path, "",
                    ": was written by another calibration (backend " + j.header.backend + ", " +
                        std::to_string(j.header.world_size) + " ranks, " + j.header.machine +
                        "); this one is backend " + header.backend + ", " +
                        std::to_string(header.world_size) + " ranks, " + header.machine +
                        ". Remove the journal or choose another --out"});
        } else {
          for (const JournalEntry& e : j.entries) seconds[e.key] = e.seconds;
        }
      }
    }
    payload[0] = root_errors.empty() ? 0 : 1;
    for (std::size_t i = 0; i < points.size(); ++i) {
      payload[i + 1] = seconds.count(point_key(points[i])) != 0 ? 1 : 0;
    }
  }
  auto shared = broadcast_bytes_from_root(payload);
  if (!shared.ok()) return shared.errors();
  if (!root_errors.empty()) return root_errors;
  if (shared.value().empty() || shared.value()[0] != 0) {
    return Error{"", "", "calibration stopped: rank 0 could not use the journal",
                 ErrorKind::kRuntime};
  }
  return std::vector<std::uint8_t>(shared.value().begin() + 1, shared.value().end());
}

Result<double> measure(Backend& backend, const BenchPoint& point,
                       const std::map<GroupKey, GroupId>& groups) {
  return std::visit(
      [&](const auto& p) -> Result<double> {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          return backend.gemm(p);
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return backend.attention(p);
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          return backend.memory_bound(p);
        } else if constexpr (std::is_same_v<T, CollectivePoint>) {
          CollectiveOp op;
          op.kind = p.kind;
          op.bytes = p.bytes;
          op.group_size = p.group_size;
          op.nodes_spanned = p.nodes_spanned;
          return backend.collective(op, groups.at({p.group_size, p.layout}));
        } else {
          const std::int32_t me = backend.world_rank();
          if (me == p.sender) return backend.p2p({P2PRequest{true, p.bytes, p.receiver, 0}});
          if (me == p.receiver) return backend.p2p({P2PRequest{false, p.bytes, p.sender, 0}});
          return 0.0;
        }
      },
      point);
}

void add_sample(Profile& profile, const BenchPoint& point, double seconds) {
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          profile.gemm.push_back(GemmSample{.m = p.m,
                                            .n = p.n,
                                            .k = p.k,
                                            .batch = p.batch,
                                            .dtype = p.dtype,
                                            .seconds = seconds,
                                            .citation = "",
                                            .layout = p.layout,
                                            .scaling = p.scaling,
                                            .fast_accum = p.fast_accum});
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          profile.attention.push_back(AttentionSample{p, seconds, ""});
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          profile.memory.push_back(MemorySample{p.bytes, seconds, ""});
        } else if constexpr (std::is_same_v<T, CollectivePoint>) {
          profile.collectives.push_back(
              CollectiveSample{p.kind, p.group_size, p.nodes_spanned, p.bytes, seconds, ""});
        } else {
          profile.p2p.push_back(P2PSample{p.inter_node, p.bytes, seconds, ""});
        }
      },
      point);
}

/// The process groups of the collectives still to measure. Every rank makes the same splits
/// in the same order (MPI_Comm_split is collective).
Result<std::map<GroupKey, GroupId>> split_groups(Backend& backend,
                                                 const std::vector<BenchPoint>& points,
                                                 const std::vector<std::uint8_t>& done) {
  std::set<GroupKey> needed;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (done[i] != 0) continue;
    if (const auto* c = std::get_if<CollectivePoint>(&points[i])) {
      needed.insert({c->group_size, c->layout});
    }
  }
  std::map<GroupKey, GroupId> groups;
  for (const GroupKey& g : needed) {
    const std::int32_t color =
        group_color(backend.world_rank(), backend.world_size(), g.first, g.second);
    auto id = backend.split(color, backend.world_rank(), CommOptions{});
    if (!id.ok()) return id.errors();
    groups[g] = id.value();
  }
  return groups;
}

/// The profile's KernelSpread: per class the median of its points' coefficients of
/// variation; not measured (repeats 0) when the backend observed none.
KernelSpread kernel_spread(
    const std::array<std::vector<double>, std::variant_size_v<BenchPoint>>& cvs, int repeats,
    const std::string& device) {
  KernelSpread out;
  if (repeats < 2) return out;
  // A profile holds coefficients within [0, 1] (profile_io.cpp's read_spread).
  const auto cv = [&cvs](std::size_t c) { return std::min(1.0, median(cvs[c])); };
  out.gemm_cv = cv(0);
  out.attention_cv = cv(1);
  out.memory_cv = cv(2);
  out.collective_cv = cv(3);
  out.p2p_cv = cv(4);
  out.repeats = repeats;
  out.citation = "measured here by stepsim calibrate on " + device +
                 ": per kernel class the median over its samples of their " +
                 std::to_string(repeats) + " timed repeats' coefficient of variation";
  return out;
}

/// Where run_calibration's measurements go: rank 0's times, its journal, the progress.
struct Measured {
  std::map<std::string, double>& seconds;  // rank 0: every measured point
  // rank 0: per kernel class (BenchPoint's alternative), the repeats' coefficients of
  // variation of the points measured in this run (a journal keeps no repeats)
  std::array<std::vector<double>, std::variant_size_v<BenchPoint>>& cvs;
  int& repeats;
  std::optional<JournalWriter>& journal;
  ProgressSink* progress;
};

/// Measures the points not done yet (up to options.stop_after), every rank together.
Status measure_points(Backend& backend, const std::vector<BenchPoint>& points,
                      const std::vector<std::uint8_t>& done,
                      const std::map<GroupKey, GroupId>& groups,
                      const CalibrationOptions& options, CalibrationRun& run, Measured to) {
  const bool root = backend.world_rank() == 0;
  std::int64_t finished = run.resumed;
  if (to.progress != nullptr) to.progress->update(finished, run.total, "");
  run.complete = true;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (done[i] != 0) continue;
    if (options.stop_after >= 0 && run.measured >= options.stop_after) {
      run.complete = false;
      break;
    }
    const std::string key = point_key(points[i]);
    auto t = measure(backend, points[i], groups);
    // Every rank learns whether any failed, so that none waits in a later collective.
    auto agreed = max_over_world({t.ok() ? 0.0 : 1.0, t.ok() ? t.value() : 0.0});
    if (!agreed.ok()) return agreed.errors();
    if (!t.ok()) return t.errors();
    if (agreed.value()[0] != 0.0) {
      return Error{"", "", "calibration stopped: another rank failed measuring " + key,
                   ErrorKind::kRuntime};
    }
    ++run.measured;
    ++finished;
    if (!root) continue;
    // Every rank ran the point at the same time; the slowest one is what a synchronous job
    // (tensor- and data-parallel peers wait for each other) advances at, as nccl-tests
    // report the slowest rank. Messages take as long as their slower end likewise.
    const double s = agreed.value()[1];
    to.seconds[key] = s;
    if (const RepeatSpread spread = backend.last_spread(); spread.repeats > 1) {
      to.cvs[points[i].index()].push_back(spread.cv);
      to.repeats = std::max(to.repeats, spread.repeats);
    }
    if (to.journal) {
      auto ok = to.journal->append({key, s});
      if (!ok.ok()) return ok.errors();
    }
    if (to.progress != nullptr) to.progress->update(finished, run.total, key);
  }
  return ok_status();
}

}  // namespace

Result<CalibrationRun> run_calibration(Backend& backend, const std::vector<BenchPoint>& points,
                                       const CalibrationOptions& options, ProgressSink* progress) {
  const double start = steady_s();
  const bool root = backend.world_rank() == 0;
  const std::string machine = host_name() + ": " + backend.device_name();
  const JournalHeader header{backend.name(), machine, backend.world_size()};
  std::map<std::string, double> seconds;  // rank 0: every measured point
  auto done = share_done_points(backend, points, options, header, seconds);
  if (!done.ok()) return done.errors();

  CalibrationRun run;
  run.total = static_cast<std::int64_t>(points.size());
  for (const std::uint8_t d : done.value()) run.resumed += d;
  auto groups = split_groups(backend, points, done.value());
  if (!groups.ok()) return groups.errors();

  std::optional<JournalWriter> journal;
  if (root && !options.journal_path.empty()) {
    auto w = JournalWriter::open(options.journal_path, header);
    if (!w.ok()) return w.errors();
    journal.emplace(std::move(w).value());
  }
  std::array<std::vector<double>, std::variant_size_v<BenchPoint>> cvs;
  int repeats = 0;
  if (auto measured = measure_points(backend, points, done.value(), groups.value(), options, run,
                                     Measured{.seconds = seconds,
                                              .cvs = cvs,
                                              .repeats = repeats,
                                              .journal = journal,
                                              .progress = progress});
      !measured.ok()) {
    return measured.errors();
  }
  // What compute and a collective beside it cost each other on this machine (every rank;
  // not journaled: a few seconds, measured again on a resumed run).
  MeasuredInterference interference;
  if (run.complete && options.interference && backend.async_collectives() &&
      backend.world_size() >= 2) {
    auto m = measure_interference(backend, interference_pair(points, backend.world_size()));
    if (!m.ok()) return m.errors();
    interference = m.value();
  }
  if (progress != nullptr) progress->finish();
  run.wall_s = steady_s() - start;
  if (!root || !run.complete) return run;

  Profile& p = run.profile;
  p.machine = machine;
  p.backend = backend.name();
  p.date = iso_date_utc();
  p.source = "measured";
  p.notes = options.notes;
  p.world_size = backend.world_size();
  for (const BenchPoint& point : points) add_sample(p, point, seconds.at(point_key(point)));
  p.interference = interference;
  p.spread = kernel_spread(cvs, repeats, backend.device_name());
  fit_profile(p);
  return run;
}

}  // namespace stepsim::calib
