// NCCL's settings of the job that stepsim prices (cost/nccl_model.hpp nccl_channel_factor): the
// ranges NCCL accepts, and what of them stepsim does not model yet.

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/layout/nccl_topology.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

/// Whether `name` is one of the expert-parallel process groups of Megatron-LM's
/// get_nccl_options (their traffic is the MoE layer's, priced by moe_ops.cpp at NCCL's
/// defaults).
bool expert_group(std::string_view name) {
  return name == "ep" || name == "ep_dp" || name == "ep_tp" || name == "ep_gtp_remat_dp" ||
         name == "expt_gtp_remat" || name == "inter_ep_dp" || name == "intra_ep_dp" ||
         name == "tp_ep_mp" || name == "tp_ep_pp" || name == "tp_ep_gtp_remat_pp" ||
         name == "tp_exp";
}

/// NCCL_ALGO / NCCL_PROTO (their syntax is checked as the scenario loads) act on NCCL's own
/// tuning model (cost/nccl_model.cpp); a system it has no model of (not an NVIDIA NVSwitch
/// platform) has no choice to restrict.
void check_nccl_restrictions(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const SystemConfig& s = w.system;
  const bool system_given =
      s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
  if ((t.nccl_algo.empty() && t.nccl_proto.empty()) || !system_given || nccl_platform(s)) return;
  check.fail(t.nccl_algo.empty() ? "training.nccl_proto" : "training.nccl_algo",
             ": restricting NCCL's algorithms or protocols on system \"" + s.name + "\" (" +
                 s.gpu_name +
                 ") is not modelled yet: NCCL's tuning model has no model of that platform");
}

}  // namespace

void check_nccl(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  for (const auto& [key, env, v] :
       {std::tuple{"training.nccl_min_nchannels", "NCCL_MIN_NCHANNELS", t.nccl_min_nchannels},
        std::tuple{"training.nccl_max_nchannels", "NCCL_MAX_NCHANNELS", t.nccl_max_nchannels}}) {
    // connect.cc ncclMinNchannels / ncclMaxNchannels: at most MAXCHANNELS.
    if (v < 0 || v > 64) {
      check.fail(key, "=" + str(v) + " (" + env + ") must be between 0 (unset) and 64 (NCCL's " +
                          "MAXCHANNELS)");
    }
  }
  // NCCL_P2P_NET_CHUNKSIZE (init.cc computeBuffSizes): NCCL caps it at buffSize / NCCL_STEPS.
  // Below the 128 KiB default a transfer's steps carry less than the profiles' samples did:
  // their per-step cost (proxy, flags, GDR flush) is not measured.
  if (t.nccl_p2p_net_chunksize < 131072) {
    check.fail("training.nccl_p2p_net_chunksize",
               "=" + str(t.nccl_p2p_net_chunksize) +
                   " (NCCL_P2P_NET_CHUNKSIZE) below NCCL's default of 131072 is not modelled yet "
                   "(smaller steps of a cross-node transfer, whose per-step cost no profile "
                   "measures)");
  }
  check_nccl_restrictions(w, check);
  if (t.nccl_group_options.empty()) return;
  const SystemConfig& s = w.system;
  for (const NcclGroupOptions& g : t.nccl_group_options) {
    const std::string key = "training.nccl_communicator_config_path";
    const std::string where =
        "=\"" + t.nccl_communicator_config_path + "\": group \"" + g.group + "\"";
    if (expert_group(g.group) && t.expert_model_parallel_size > 1) {
      check.fail(key, where +
                          " sets options of an expert-parallel group: not modelled yet (the "
                          "MoE layer's communication is priced at NCCL's defaults)");
      continue;
    }
    if (g.group == "hcp" && !t.hierarchical_context_parallel_sizes.empty()) {
      check.fail(key, where +
                          " sets options of the hierarchical context-parallel groups: not "
                          "modelled yet");
      continue;
    }
    // The pipeline's and the context-parallel ring's sends run on two-rank communicators made
    // with the group's options (PyTorch's ProcessGroupNCCL for single sends and receives);
    // their channels follow the same limits (graph/paths.cc ncclTopoComputeP2pChannels takes
    // the communicator's channels). Fewer channels than NCCL's own would slow the sends:
    // not priced.
    const bool p2p_group = (g.group == "pp" && t.pipeline_model_parallel_size > 1) ||
                           (g.group == "cp" && t.context_parallel_size > 1 &&
                            t.cp_comm_type != CpCommType::kAllGather);
    if (!p2p_group) continue;
    // Megatron's rank order tp-cp-(ep-)dp-pp: pipeline neighbours are world / pp ranks apart,
    // context-parallel neighbours tp ranks apart; a pair shares a node only if that stride is
    // below the node's GPUs, and a ring crosses nodes once its members outgrow one.
    const std::int64_t gpn = std::max<std::int64_t>(1, s.nvlink_domain());
    const std::int64_t p = t.pipeline_model_parallel_size;
    const std::int64_t stride = g.group == "pp" ? t.world_size / std::max<std::int64_t>(1, p)
                                                : t.tensor_model_parallel_size;
    const std::int64_t span = stride * (g.group == "pp" ? p : t.context_parallel_size);
    std::vector<std::int64_t> pairs;
    if (stride < gpn) pairs.push_back(1);
    if (stride >= gpn || span > gpn) pairs.push_back(2);
    for (const std::int64_t nodes : pairs) {
      const auto comm = nccl_comm(s, 2, nodes);
      if (!comm) continue;
      const int own = nccl_run_channels(*comm, 0, 0, 0, 0);
      const int run = nccl_run_channels(*comm, t.nccl_min_nchannels, t.nccl_max_nchannels,
                                        g.min_ctas, g.max_ctas);
      if (run < own) {
        check.fail(key, where + " (max_ctas " + str(g.max_ctas) +
                            ") leaves its point-to-point "
                            "communicators " +
                            str(run) + " channels of NCCL's own " + str(own) +
                            (nodes == 1 ? " inside a node" : " across nodes") +
                            ": sends on fewer channels are not modelled yet (NCCL_MIN_NCHANNELS "
                            "raises the floor)");
        break;
      }
    }
  }
}

}  // namespace stepsim::detail
