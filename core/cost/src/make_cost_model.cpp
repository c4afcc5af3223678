#include "stepsim/cost/make_cost_model.hpp"

#include <algorithm>
#include <filesystem>

#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"

namespace stepsim {

Result<std::shared_ptr<const Profile>> load_shared_profile(const std::string& path) {
  Result<Profile> p = load_profile_file(path);
  if (!p) return p.errors();
  return std::shared_ptr<const Profile>(std::make_shared<Profile>(std::move(p).value()));
}

SystemConfig nccl_job_system(const Workload& w) {
  SystemConfig system = w.system;
  system.nccl_nvls = w.training.nccl_nvls_enable != 0;  // NCCL_NVLS_ENABLE of the job
  system.nccl_enabled = nccl_enabled(w.training.nccl_algo, w.training.nccl_proto);
  system.nccl_min_nchannels = w.training.nccl_min_nchannels;
  system.nccl_max_nchannels = w.training.nccl_max_nchannels;
  for (std::size_t g = 0; g < system.nccl_group_limits.size(); ++g) {
    const auto options = nccl_group_options(w.training, static_cast<CommGroup>(g));
    if (!options) continue;
    system.nccl_group_limits[g].min_ctas = std::max<std::int64_t>(0, options->min_ctas);
    system.nccl_group_limits[g].max_ctas = std::max<std::int64_t>(0, options->max_ctas);
  }
  return system;
}

Result<std::unique_ptr<CostModel>> make_cost_model(const Workload& w,
                                                   std::shared_ptr<const Profile> profile) {
  SystemConfig system = nccl_job_system(w);
  if (w.cost_model.kind == CostModelSpec::Kind::kRoofline) {
    return std::unique_ptr<CostModel>(std::make_unique<RooflineCostModel>(std::move(system)));
  }
  if (profile == nullptr) {
    auto loaded = load_shared_profile(w.cost_model.profile_path);
    if (!loaded) return loaded.errors();
    profile = std::move(loaded).value();
  }
  std::string label = std::filesystem::path(w.cost_model.profile_path).filename().string();
  if (label.empty()) label = profile->machine;
  return std::unique_ptr<CostModel>(std::make_unique<CalibratedCostModel>(
      std::move(profile), std::move(label), std::move(system)));
}

Result<std::unique_ptr<CostModel>> make_cost_model(const Workload& w) {
  return make_cost_model(w, nullptr);
}

}  // namespace stepsim
