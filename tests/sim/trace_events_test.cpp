// The trace as Chrome trace events (docs/trace.md): a valid event object whose slices nest on
// every track, every track named, the bubble and exposed-communication tracks adding up to
// the report's figures; and the default level, which keeps a big job's trace small.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../support/cli_runner.hpp"

namespace stepsim {
namespace {

using testing::read_file;
using testing::run_stepsim;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

using Track = std::pair<int, int>;  // (pid, tid)
using Spans = std::vector<std::pair<double, double>>;

/// Checks `j` is a Chrome trace event object: a traceEvents array of events with a phase;
/// complete events (X) with ts, dur >= 0; begin/end events (B/E) balanced per track; every
/// track's slices nested or apart; every track and process named. Returns the slices by track.
std::map<Track, Spans> check_chrome_trace(const nlohmann::json& j) {
  std::map<Track, Spans> tracks;
  std::map<Track, std::vector<double>> begun;
  std::set<Track> thread_names;
  std::set<int> process_names, pids;
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j.at("traceEvents").is_array());
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      if (e["name"] == "thread_name") thread_names.insert(Track{e["pid"].get<int>(), e["tid"].get<int>()});
      if (e["name"] == "process_name") process_names.insert(e["pid"].get<int>());
      continue;
    }
    if (ph != "X" && ph != "B" && ph != "E") continue;
    const Track t{e.at("pid").get<int>(), e.at("tid").get<int>()};
    pids.insert(t.first);
    const double ts = e.at("ts").get<double>();
    EXPECT_GE(ts, 0.0);
    if (ph == "X") {
      const double dur = e.at("dur").get<double>();
      EXPECT_GE(dur, 0.0) << e.dump();
      tracks[t].emplace_back(ts, ts + dur);
    } else if (ph == "B") {
      begun[t].push_back(ts);
    } else {
      EXPECT_FALSE(begun[t].empty()) << "an E event without its B: " << e.dump();
      if (begun[t].empty()) continue;
      tracks[t].emplace_back(begun[t].back(), ts);
      begun[t].pop_back();
    }
  }
  for (const auto& [t, open] : begun) EXPECT_TRUE(open.empty()) << "unbalanced B on " << t.first;
  for (auto& [t, slices] : tracks) {
    EXPECT_TRUE(thread_names.count(t)) << "pid " << t.first << " tid " << t.second << " unnamed";
    std::sort(slices.begin(), slices.end(),
              [](const auto& a, const auto& b) {
                return a.first != b.first ? a.first < b.first : a.second > b.second;
              });
    std::vector<double> open;  // ends of the enclosing slices
    for (const auto& [start, end] : slices) {
      while (!open.empty() && open.back() <= start + 1e-6) open.pop_back();
      EXPECT_TRUE(open.empty() || end <= open.back() + 1e-6)
          << "pid " << t.first << " tid " << t.second << ": a slice at " << start
          << " us overlaps another without nesting";
      open.push_back(end);
    }
  }
  for (const int pid : pids) EXPECT_TRUE(process_names.count(pid)) << "pid " << pid;
  return tracks;
}

/// The tid of the track named `name` on `pid` (-1: none).
int tid_named(const nlohmann::json& j, int pid, const std::string& name) {
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid &&
        e["args"]["name"] == name) {
      return e["tid"].get<int>();
    }
  }
  return -1;
}

/// The trace at `level` of a pipeline-parallel job (p 4): valid, and its bubble and
/// exposed-communication tracks sum to each stage's bubble_s and exposed_comm_s, their
/// slices by name to the report's bubble parts.
void check_idle_tracks(const std::string& level) {
  const std::string scenario = kScenarios + "/mixtral-8x7b-h100-64.json";
  const std::string path = ::testing::TempDir() + "/stepsim_trace_idle_" + level + ".json";
  const auto run = run_stepsim("predict " + scenario + " --format json --trace " + path +
                                   " --trace-level " + level,
                               false);
  ASSERT_EQ(run.status, 0) << run.out;
  const auto report = nlohmann::json::parse(run.out);
  const auto j = nlohmann::json::parse(read_file(path));
  std::remove(path.c_str());
  check_chrome_trace(j);
  EXPECT_EQ(j["stepsim"]["trace_level"], level);
  const auto& stages = report["stages"];
  ASSERT_EQ(stages.size(), 4u);
  std::map<std::string, double> by_name;
  for (const auto& st : stages) {
    const int pid = st["stage"].get<int>();
    const int bubble = tid_named(j, pid, "bubble");
    const int exposed = tid_named(j, pid, "exposed communication");
    ASSERT_GE(bubble, 0) << "stage " << pid;
    ASSERT_GE(exposed, 0) << "stage " << pid;
    double bubble_s = 0, exposed_s = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"] != pid) continue;
      const double s = e["dur"].get<double>() * 1e-6;
      if (e["tid"] == bubble) {
        bubble_s += s;
        EXPECT_EQ(e["cat"], "bubble");
        by_name[e["name"]] += s;
      } else if (e["tid"] == exposed) {
        exposed_s += s;
        EXPECT_EQ(e["cat"], "exposed_comm");
        EXPECT_EQ(e["name"].get<std::string>().rfind("exposed ", 0), 0u) << e["name"];
        by_name["exposed"] += s;
      }
    }
    EXPECT_NEAR(bubble_s, st["bubble_s"].get<double>(), 1e-6) << "stage " << pid;
    EXPECT_NEAR(exposed_s, st["exposed_comm_s"].get<double>(), 1e-6) << "stage " << pid;
  }
  const auto& b = report["bubble"];
  const double n = static_cast<double>(stages.size());
  EXPECT_GT(b["schedule_s"].get<double>(), 0.0);
  EXPECT_NEAR(by_name["schedule bubble"] / n, b["schedule_s"].get<double>(), 1e-6);
  EXPECT_NEAR(by_name["stage imbalance"] / n, b["stage_imbalance_s"].get<double>(), 1e-6);
  EXPECT_NEAR(by_name["wait"] / n, b["waits_s"].get<double>(), 1e-6);
  EXPECT_GT(by_name["exposed"], 0.0);
}

TEST(TraceEvents, OpLevelIsValidWithBubbleAndExposedTracks) { check_idle_tracks("op"); }

TEST(TraceEvents, MicrobatchLevelIsValidWithBubbleAndExposedTracks) {
  check_idle_tracks("microbatch");
}

// The schedule's bubble lies where 1F1B leaves it: on the last stage, before its first
// forward (the warm-up of the stages before it).
TEST(TraceEvents, ScheduleBubbleOpensTheLastStage) {
  const std::string path = ::testing::TempDir() + "/stepsim_trace_warmup.json";
  ASSERT_EQ(run_stepsim("predict " + kScenarios + "/mixtral-8x7b-h100-64.json --format json "
                        "--trace-level microbatch --trace-ranks 3 --trace " + path, false)
                .status,
            0);
  const auto j = nlohmann::json::parse(read_file(path));
  std::remove(path.c_str());
  const int bubble = tid_named(j, 3, "bubble");
  double first_compute = 1e300;
  std::string first_bubble;
  double first_bubble_ts = 1e300;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 3) continue;
    const double ts = e["ts"].get<double>();
    if (e["tid"] == 0) first_compute = std::min(first_compute, ts);
    if (e["tid"] == bubble && ts < first_bubble_ts) {
      first_bubble_ts = ts;
      first_bubble = e["name"];
    }
  }
  EXPECT_EQ(first_bubble_ts, 0.0);
  EXPECT_EQ(first_bubble, "schedule bubble");
  EXPECT_GT(first_compute, 0.0);
}

// The default trace of a 70B job on 64 GPUs would pass 50 MB at op level: it is written at
// micro-batch level, with a note on stderr and in the trace; a small job stays at op level,
// and --trace-level op forces it.
TEST(TraceSize, DefaultPicksMicrobatchLevelForABigJob) {
  const std::string path = ::testing::TempDir() + "/stepsim_trace_big.json";
  const auto big = run_stepsim("predict " + kScenarios + "/llama31-70b-h100-64.json --trace " +
                               path + " 2>&1 >/dev/null", false);
  ASSERT_EQ(big.status, 0) << big.out;
  EXPECT_NE(big.out.find("note: an op-level trace would be about"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("micro-batch level"), std::string::npos) << big.out;
  const std::string text = read_file(path);
  std::remove(path.c_str());
  EXPECT_LT(text.size(), 50'000'000u);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["stepsim"]["trace_level"], "microbatch");
  EXPECT_NE(j["stepsim"]["trace_note"].get<std::string>().find("--trace-level op"),
            std::string::npos);

  const auto small = run_stepsim("predict " + kScenarios + "/mixtral-8x7b-h100-64.json --trace " +
                                 path + " 2>&1 >/dev/null", false);
  ASSERT_EQ(small.status, 0);
  EXPECT_EQ(small.out, "");  // no note
  EXPECT_EQ(nlohmann::json::parse(read_file(path))["stepsim"]["trace_level"], "op");

  // Forced: gpt3-175b-a100-64's op-level trace (~78 MB) is over the default's budget.
  const auto forced = run_stepsim("predict " + kScenarios + "/gpt3-175b-a100-64.json " +
                                  "--trace-level op --trace " + path + " 2>&1 >/dev/null", false);
  ASSERT_EQ(forced.status, 0);
  EXPECT_EQ(forced.out, "");
  const std::string op = read_file(path);
  std::remove(path.c_str());
  EXPECT_GT(op.size(), 50'000'000u);
  EXPECT_NE(op.find("\"trace_level\":\"op\"", op.size() - 100'000), std::string::npos);
}

}  // namespace
}  // namespace stepsim
