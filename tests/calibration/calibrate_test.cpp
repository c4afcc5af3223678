// The calibration runner in one process: profile building, journal, resume.

#include "stepsim/calibration/calibrate.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "mpi_environment.hpp"
#include "stepsim/calibration/journal.hpp"

namespace stepsim::calib {
namespace {

std::vector<BenchPoint> small_plan() {
  return {GemmOp{32, 32, 32, 1, DType::kFp32},
          GemmOp{64, 32, 16, 1, DType::kFp32},
          GemmOp{16, 64, 64, 2, DType::kFp32},
          MemoryBoundOp{1 << 16},
          MemoryBoundOp{1 << 18},
          MemoryBoundOp{1 << 20}};
}

std::unique_ptr<Backend> cpu() {
  BackendOptions o;
  o.warmup = 0;
  o.repeats = 1;
  auto b = make_backend("cpu", o);
  EXPECT_TRUE(b.ok());
  return std::move(b).value();
}

std::string temp_path(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("stepsim_calib_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(RunCalibration, MeasuresEveryPointAndBuildsTheProfile) {
  auto b = cpu();
  CalibrationOptions o;
  o.journal_path = temp_path("full.journal");
  std::filesystem::remove(o.journal_path);
  o.notes = {"a note"};
  auto run = run_calibration(*b, small_plan(), o, nullptr);
  ASSERT_TRUE(run.ok()) << format_errors(run.errors());
  const CalibrationRun& r = run.value();
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.total, 6);
  EXPECT_EQ(r.measured, 6);
  EXPECT_EQ(r.resumed, 0);
  EXPECT_EQ(r.profile.backend, "cpu");
  EXPECT_EQ(r.profile.source, "measured");
  EXPECT_EQ(r.profile.world_size, 1);
  EXPECT_EQ(r.profile.notes, std::vector<std::string>{"a note"});
  ASSERT_EQ(r.profile.gemm.size(), 3u);
  EXPECT_EQ(r.profile.gemm[2].batch, 2);
  ASSERT_EQ(r.profile.memory.size(), 3u);
  for (const auto& s : r.profile.gemm) EXPECT_GT(s.seconds, 0.0);
  EXPECT_GT(r.profile.memory_fit.samples, 0);
  EXPECT_EQ(r.profile.date.size(), 20u);  // 2026-01-01T00:00:00Z
  // The journal holds a header and every point.
  auto j = read_journal(o.journal_path);
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(j.value().has_value());
  EXPECT_EQ(j.value()->entries.size(), 6u);
  EXPECT_EQ(j.value()->header.backend, "cpu");
}

TEST(MedianProfile, TakesEachSamplesMedianOverTheRoundsAndRefits) {
  // Three rounds of the same points; round 1 caught a slow burst, round 2 a fast one.
  auto round = [](double gemm_s, double scale) {
    Profile p;
    p.machine = "m";
    p.gemm = {GemmSample{64, 64, 64, 1, DType::kFp32, gemm_s, ""}};
    for (const std::int64_t bytes : {1 << 16, 1 << 20, 1 << 24}) {
      // 1 us + bytes / (10 GB/s), scaled.
      p.memory.push_back(
          MemorySample{bytes, scale * (1e-6 + static_cast<double>(bytes) / 1e10), ""});
    }
    p.collectives = {CollectiveSample{CollectiveKind::kAllReduce, 2, 1, 1 << 20, scale * 2e-4, ""}};
    p.p2p = {P2PSample{false, 1 << 20, scale * 1e-4, ""}};
    return p;
  };
  const Profile median =
      median_profile({round(1.0e-3, 1.0), round(9.0e-3, 3.0), round(0.5e-3, 0.5)});
  EXPECT_EQ(median.machine, "m");
  ASSERT_EQ(median.gemm.size(), 1u);
  EXPECT_DOUBLE_EQ(median.gemm[0].seconds, 1.0e-3);
  ASSERT_EQ(median.memory.size(), 3u);
  EXPECT_DOUBLE_EQ(median.memory[2].seconds, 1e-6 + static_cast<double>(1 << 24) / 1e10);
  EXPECT_DOUBLE_EQ(median.collectives[0].seconds, 2e-4);
  EXPECT_DOUBLE_EQ(median.p2p[0].seconds, 1e-4);
  // The fit is redone from the medians: the unscaled round's 10 GB/s.
  EXPECT_NEAR(median.memory_fit.bandwidth_bytes_per_s, 1e10, 1e7);
  EXPECT_EQ(median.memory_fit.samples, 3);
  // An even count: the mean of the middle two.
  const Profile two = median_profile({round(1.0e-3, 1.0), round(3.0e-3, 1.0)});
  EXPECT_DOUBLE_EQ(two.gemm[0].seconds, 2.0e-3);
}

TEST(RunCalibration, ResumesFromAnInterruptedJournal) {
  auto b = cpu();
  CalibrationOptions o;
  o.journal_path = temp_path("resume.journal");
  std::filesystem::remove(o.journal_path);
  o.stop_after = 2;
  auto first = run_calibration(*b, small_plan(), o, nullptr);
  ASSERT_TRUE(first.ok()) << format_errors(first.errors());
  EXPECT_FALSE(first.value().complete);
  EXPECT_EQ(first.value().measured, 2);
  auto partial = read_journal(o.journal_path);
  ASSERT_TRUE(partial.ok());
  ASSERT_EQ(partial.value()->entries.size(), 2u);

  // Mark the journaled results and cut a line in half, as a crash while writing would.
  {
    std::ofstream out(o.journal_path, std::ios::trunc);
    out << journal_header_line(partial.value()->header);
    out << journal_entry_line({partial.value()->entries[0].key, 111.0});
    out << journal_entry_line({partial.value()->entries[1].key, 222.0});
    out << "{\"key\":\"memory bytes=";
  }
  o.stop_after = -1;
  auto second = run_calibration(*b, small_plan(), o, nullptr);
  ASSERT_TRUE(second.ok()) << format_errors(second.errors());
  const CalibrationRun& r = second.value();
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.resumed, 2);
  EXPECT_EQ(r.measured, 4);  // only the rest
  ASSERT_EQ(r.profile.gemm.size(), 3u);
  EXPECT_EQ(r.profile.gemm[0].seconds, 111.0);  // taken from the journal, not re-measured
  EXPECT_EQ(r.profile.gemm[1].seconds, 222.0);
  EXPECT_LT(r.profile.gemm[2].seconds, 100.0);
  auto full = read_journal(o.journal_path);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full.value()->torn_tail);
  EXPECT_EQ(full.value()->entries.size(), 6u);
}

TEST(RunCalibration, RefusesAJournalOfAnotherRun) {
  auto b = cpu();
  CalibrationOptions o;
  o.journal_path = temp_path("foreign.journal");
  {
    std::ofstream out(o.journal_path, std::ios::trunc);
    out << journal_header_line({"cuda", "dgx: H100", 8});
  }
  auto run = run_calibration(*b, small_plan(), o, nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.errors()[0].file, o.journal_path);
  EXPECT_NE(run.errors()[0].message.find("backend cuda, 8 ranks"), std::string::npos);
}

TEST(Journal, ASecondWriterIsRefusedWhileTheFirstHoldsTheLock) {
  const std::string path = temp_path("locked.journal");
  std::filesystem::remove(path);
  const JournalHeader header{"cpu", "test", 1};
  {
    auto first = JournalWriter::open(path, header);
    ASSERT_TRUE(first.ok()) << format_errors(first.errors());
    // As a rerun started while the orphaned ranks of a killed mpirun still append.
    auto second = JournalWriter::open(path, header);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.errors()[0].file, path);
    EXPECT_EQ(second.errors()[0].kind, ErrorKind::kRuntime);
    EXPECT_NE(second.errors()[0].message.find("is locked by another calibration"),
              std::string::npos);
    ASSERT_TRUE(first.value().append({"gemm a", 1.0}).ok());
  }
  // The first writer is gone: the lock with it.
  auto again = JournalWriter::open(path, header);
  ASSERT_TRUE(again.ok()) << format_errors(again.errors());
  auto contents = read_journal(path);
  ASSERT_TRUE(contents.ok());
  ASSERT_EQ(contents.value()->entries.size(), 1u);
}

TEST(Journal, ReportsTheFileAndLineOfABadEntry) {
  const std::string path = temp_path("bad.journal");
  {
    std::ofstream out(path, std::ios::trunc);
    out << journal_header_line({"cpu", "m", 1}) << journal_entry_line({"a", 1.0})
        << "{\"key\":\"b\",\"seconds\":-1}\n";
  }
  auto j = read_journal(path);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.errors()[0].to_string().substr(0, path.size() + 8), path + ": line 3");
  auto missing = read_journal(temp_path("missing.journal"));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing.value().has_value());
}

TEST(StreamProgress, PlainLinesWhenNotATerminal) {
  std::ostringstream out;
  StreamProgress p(out, /*terminal=*/false, /*line_every_s=*/1000.0);
  p.update(0, 4, "");
  p.update(1, 4, "gemm a");
  p.update(2, 4, "gemm b");
  p.update(4, 4, "gemm c");
  p.finish();
  const std::string text = out.str();
  EXPECT_NE(text.find("0/4 (0%)"), std::string::npos);
  EXPECT_EQ(text.find("1/4"), std::string::npos);  // throttled
  EXPECT_NE(text.find("4/4 (100%)"), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(StreamProgress, BarWithEtaOnATerminal) {
  std::ostringstream out;
  StreamProgress p(out, /*terminal=*/true);
  p.update(0, 10, "");
  p.update(5, 10, "gemm x");
  EXPECT_NE(out.str().find("\r[###############...............] 5/10 (50%)"), std::string::npos);
  EXPECT_NE(out.str().find("ETA 0:0"), std::string::npos);
}

TEST(Summary, ShowsPeaksAndBusBandwidth) {
  Profile p;
  p.machine = "host: cpu";
  p.backend = "cpu";
  p.world_size = 2;
  p.gemm = {GemmSample{1000, 1000, 1000, 1, DType::kFp32, 0.01, ""},
            GemmSample{100, 100, 100, 1, DType::kFp32, 0.001, ""}};
  p.memory = {MemorySample{1000000000, 0.5, ""}};
  p.collectives = {CollectiveSample{CollectiveKind::kAllReduce, 2, 1, 1 << 20, 1e-3, ""},
                   CollectiveSample{CollectiveKind::kAllReduce, 2, 1, 1 << 10, 1e-3, ""}};
  std::ostringstream out;
  write_summary(out, p);
  const std::string text = out.str();
  EXPECT_NE(text.find("peak 0.200 TFLOP/s at fp32 m=1000"), std::string::npos) << text;
  EXPECT_NE(text.find("peak 2.00 GB/s"), std::string::npos) << text;
  // 1 MiB in 1 ms: algbw 1.05 GB/s, busbw = algbw * 2(n-1)/n = 1.05 GB/s for n = 2.
  EXPECT_NE(text.find("all_reduce      2      1      1 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("1.05"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllGather, 8), 0.875);
}

}  // namespace
}  // namespace stepsim::calib
