// training.nccl_nvls_enable: NCCL's NCCL_NVLS_ENABLE of the job's environment (Megatron-Bridge's
// Llama 3.1 405B recipes set 0). With 0, NCCL's tuning has no NVLink SHARP algorithm to pick
// (src/transport/nvls.cc ncclNvlsInit): the cost models price a collective NCCL would have run
// with NVLS as NCCL's model of the group without it, and scale a measured one by that model's
// ratio. The launch line's assignment becomes the key, and megatron_args_of writes it back.

#include <gtest/gtest.h>

#include <string>

#include "shipped_scenario.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

/// Llama 3 8B FP8 on one DGX H100 (dp 8, the public H100 profile's measured 8-GPU all-reduce
/// curve), with NCCL_NVLS_ENABLE `value`.
Workload llama(std::int64_t value) {
  auto w = testing::shipped_with(
      "llama3-8b-h100-8-fp8.json", "\"nccl_nvls_enable\": " + std::to_string(value),
      {{"\"profile\": \"profiles/h100-sxm5-80gb-measured.json\"",
        "\"profile\": \"profiles/h100-sxm5-80gb-public.json\""}});
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return std::move(w).value();
}

double seconds(const Workload& w, const CollectiveOp& op) {
  auto model = make_cost_model(w);
  EXPECT_TRUE(model.ok());
  return model.ok() ? (*model)->collective_s(op) : 0.0;
}

TEST(NcclNvls, OffScalesAMeasuredCollectiveThatNcclRanWithNvls) {
  const Workload on = llama(2);
  const Workload off = llama(0);
  // 64 MiB all-reduce over the node's 8 GPUs: NCCL picks NVLS (nccl_model_test), and the
  // profile's sample is nccl-tests' with it.
  const CollectiveOp all_reduce{.kind = CollectiveKind::kAllReduce,
                                .group = CommGroup::kData,
                                .bytes = 64 * kMiB,
                                .group_size = 8,
                                .nodes_spanned = 1};
  SystemConfig without = off.system;
  without.nccl_nvls = false;
  const double factor = nccl_tuning_factor(without, all_reduce);
  EXPECT_GT(factor, 1.0);
  EXPECT_DOUBLE_EQ(seconds(off, all_reduce), seconds(on, all_reduce) * factor);
  // The ring wins an all-gather with NVLS on too: unchanged. Forced on (1) prices as 2.
  CollectiveOp all_gather = all_reduce;
  all_gather.kind = CollectiveKind::kAllGather;
  EXPECT_DOUBLE_EQ(seconds(off, all_gather), seconds(on, all_gather));
  EXPECT_DOUBLE_EQ(seconds(llama(1), all_reduce), seconds(on, all_reduce));
}

TEST(NcclNvls, ValuesAreNcclsAndForcingNeedsMulticast) {
  auto bad = testing::shipped_with("llama3-8b-h100-8-fp8.json", "\"nccl_nvls_enable\": 3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(format_errors(bad.errors())
                .find("training.nccl_nvls_enable=3 (NCCL_NVLS_ENABLE) must be 0, 1 or 2"),
            std::string::npos)
      << format_errors(bad.errors());
  // An A100 node has no NVLink SHARP: NCCL fails when forced, and 0 changes nothing there.
  const std::vector<std::pair<std::string, std::string>> a100 = {
      {"systems/dgx-h100-80gb.json", "systems/dgx-a100-80gb.json"},
      {"\"fp8\": \"hybrid\",", ""},
      {"\"fp8_amax_history_len\": 1024,", ""},
      {"\"fp8_param_gather\": true", "\"fp8_param_gather\": false"}};
  auto forced = testing::shipped_with("llama3-8b-h100-8-fp8.json", "\"nccl_nvls_enable\": 1", a100);
  ASSERT_FALSE(forced.ok());
  EXPECT_NE(format_errors(forced.errors()).find("=1 (NCCL_NVLS_ENABLE) forces NVLink SHARP"),
            std::string::npos)
      << format_errors(forced.errors());
  EXPECT_TRUE(testing::shipped_with("llama3-8b-h100-8-fp8.json", "\"nccl_nvls_enable\": 0", a100)
                  .ok());
}

TEST(NcclNvls, TheLaunchLinesAssignmentIsTheKey) {
  const std::string& flags = testing::kSmallLaunchFlags;
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  const auto load = testing::load_imported;
  auto r = scenario_from_megatron_args("NCCL_NVLS_ENABLE=0" + flags, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.nccl_nvls_enable, 0);
  const std::string back = megatron_args_of(w);
  EXPECT_TRUE(back.starts_with("NCCL_NVLS_ENABLE=0 --num-layers 4")) << back;
  // NCCL's default is not written back.
  auto plain = scenario_from_megatron_args(flags, o);
  ASSERT_TRUE(plain.ok());
  const Workload d = load(plain->scenario_json);
  EXPECT_EQ(d.training.nccl_nvls_enable, 2);
  EXPECT_EQ(megatron_args_of(d).find("NCCL_NVLS_ENABLE"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
