// NCCL's channel limits of a job: which process group Megatron's communicator options apply
// to, how many channels a communicator runs under NCCL_MIN/MAX_NCHANNELS and minCTAs/maxCTAs,
// and what that does to a collective's time (declared in nccl_model.hpp; the constants and
// lines are NCCL's, at the commit nccl_model.hpp names).

#include <algorithm>
#include <optional>
#include <string_view>

#include "stepsim/cost/nccl_model.hpp"

namespace stepsim {

namespace {

/// The CommGroup whose collectives Megatron runs on the process group a
/// --nccl-communicator-config-path key names (parallel_state.py): nullopt for groups whose
/// collectives stepsim does not price as NCCL collectives of its own groups (the pipeline's and
/// the context-parallel ring's sends are checked by validate_nccl.cpp instead).
std::optional<CommGroup> megatron_group_of(std::string_view name, const TrainingConfig& t) {
  if (name == "tp") return CommGroup::kTensor;
  // DDP's and the distributed optimizer's reductions and gathers run on the data-parallel
  // group with context parallelism (get_data_parallel_group(with_context_parallel=True)).
  if (name == "dp_cp") return CommGroup::kData;
  if (name == "embd") return CommGroup::kEmbedding;
  if (name == "cp") return CommGroup::kContext;
  // get_amax_reduction_group: tensor + data (+ context) parallel, or tensor + context with
  // tp_only_amax_red.
  if (name == "tp_dp_cp") return CommGroup::kTensorData;
  if (name == "tp_cp") return CommGroup::kTensorContext;
  // The grad-norm all-reduce: the model-parallel group without the distributed optimizer
  // (with it, the default process group, which takes no options).
  if (name == "mp" && !t.use_distributed_optimizer) return CommGroup::kGradStats;
  return std::nullopt;
}

}  // namespace

std::optional<NcclGroupOptions> nccl_group_options(const TrainingConfig& t, CommGroup group) {
  for (const NcclGroupOptions& g : t.nccl_group_options) {
    if (megatron_group_of(g.group, t) == group) return g;
  }
  return std::nullopt;
}

double nccl_channel_factor(const SystemConfig& system, const CollectiveOp& op) {
  if (op.kind != CollectiveKind::kAllReduce && op.kind != CollectiveKind::kAllGather &&
      op.kind != CollectiveKind::kReduceScatter) {
    return 1.0;
  }
  if (!op.nccl || op.group_size <= 1 || op.bytes <= 0) return 1.0;
  const auto group = static_cast<std::size_t>(op.group);
  static_assert(static_cast<std::size_t>(CommGroup::kTensorContext) < 16,
                "SystemConfig::nccl_group_limits holds 16 groups");
  const SystemConfig::NcclChannelLimit limit = system.nccl_group_limits[group];
  if (system.nccl_min_nchannels <= 0 && system.nccl_max_nchannels <= 0 && limit.min_ctas <= 0 &&
      limit.max_ctas <= 0) {
    return 1.0;
  }
  const auto comm = nccl_comm(system, op.group_size, op.nodes_spanned);
  if (!comm) return 1.0;
  const int run = nccl_run_channels(*comm, system.nccl_min_nchannels, system.nccl_max_nchannels,
                                    limit.min_ctas, limit.max_ctas);
  // NCCL's tuning (tuning.cc:324, busBw = graph channels x per-channel bandwidth) never sees the
  // limits, so it picks the same algorithm and protocol; the kernel runs `run` channels
  // (enqueue.cc topoGetAlgoInfo: nc = comm->nChannels). Its bandwidth is NCCL's own formula
  // with the channels that run: a graph keeps at most `run` of its channels, each at the
  // per-channel speed the search placed (channels above the graph's, duplicates on the same
  // links, add none).
  NcclComm capped = *comm;
  capped.ring.channels = std::min(capped.ring.channels, run);
  capped.tree.channels = std::min(capped.tree.channels, run);
  // nvls.cc:234-235: the NVLS channels are clamped to [minCTAs, maxCTAs] (16 by default on
  // Hopper), NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS aside.
  const std::int64_t nvls_run =
      std::max<std::int64_t>(limit.min_ctas > 0 ? limit.min_ctas : 1,
                             std::min<std::int64_t>(limit.max_ctas > 0 ? limit.max_ctas : 64, 16));
  capped.nvls.channels = std::min<int>(capped.nvls.channels, static_cast<int>(nvls_run));
  if (capped == *comm) return 1.0;
  const NcclChoice chosen = NcclModel(*comm).choose(op.kind, op.bytes);
  const auto at_defaults = NcclModel(*comm).time_s(op.kind, chosen.algo, chosen.proto, op.bytes);
  const auto limited = NcclModel(capped).time_s(op.kind, chosen.algo, chosen.proto, op.bytes);
  if (!at_defaults || !limited || *at_defaults <= 0) return 1.0;
  return std::max(1.0, *limited / *at_defaults);
}

}  // namespace stepsim
