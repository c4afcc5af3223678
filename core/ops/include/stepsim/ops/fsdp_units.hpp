#pragma once
// Sharded data parallelism's units: Megatron-FSDP (megatron/core/distributed/fsdp/
// mcore_fsdp_adapter.py: fsdp_unit_modules = TransformerLayer, MoETransformerLayer,
// MambaLayer for every strategy but no_shard) and torch FSDP2 (fully_shard per transformer
// layer, torch_fully_sharded_data_parallel.py). Parameters outside the units (embedding, final
// norm, output layer) belong to the root module, gathered once before its forward.

#include <cstdint>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// What the job shards: Megatron-FSDP's data_parallel_sharding_strategy; torch FSDP2 shards
/// parameters, gradients and optimizer states (optim_grads_params). Meaningful with fsdp().
DpSharding fsdp_sharding(const TrainingConfig& t);

/// Parameters of one unit (one transformer layer) on this rank (FSDP needs pipeline
/// parallelism 1 and no experts, so every layer holds as many).
std::int64_t fsdp_unit_parameters(const Workload& w);

/// Parameters of the root module on this rank: everything but the transformer layers.
std::int64_t fsdp_root_parameters(const Workload& w);

}  // namespace stepsim
