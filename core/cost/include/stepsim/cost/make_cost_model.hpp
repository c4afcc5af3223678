#pragma once
// Builds the cost model a workload asks for (scenario key `cost_model`).

#include <memory>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// `"roofline"`: a RooflineCostModel of `w.system`. `{"profile": ...}`: the profile at
/// `w.cost_model.profile_path` (already resolved by the loader) as a CalibratedCostModel.
/// The profile answers everything it has data for; `w.system`'s roofline answers the rest
/// (e.g. inter-node collectives of a profile measured on one node), and the model's
/// warnings() say which ops that was. The system is needed anyway (memory capacity, GPUs
/// per node), so a profile never has to describe the whole machine.
/// Errors: the profile file cannot be read or is malformed (naming the file and the key).
Result<std::unique_ptr<CostModel>> make_cost_model(const Workload& w);

/// Same, with the profile already loaded: a sweep loads it once and shares it between the
/// configurations it builds. `profile` is used only when the workload asks for a profile.
Result<std::unique_ptr<CostModel>> make_cost_model(const Workload& w,
                                                   std::shared_ptr<const Profile> profile);

/// The system NCCL's tuning sees for job `w`: `w.system` with the job's NCCL settings
/// (training.nccl_nvls_enable, nccl_algo, nccl_proto, the channel limits), as
/// make_cost_model hands it to the cost models.
SystemConfig nccl_job_system(const Workload& w);

/// Loads a profile file for sharing (see above).
Result<std::shared_ptr<const Profile>> load_shared_profile(const std::string& path);

}  // namespace stepsim
