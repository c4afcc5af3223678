#pragma once
// Megatron-LM's --nccl-communicator-config-path: a YAML file of ncclConfig_t options per
// process group (megatron/core/parallel_state.py get_nccl_options, read with
// yaml.safe_load): group names mapped to flat mappings of min_ctas, max_ctas,
// cga_cluster_size, net_name and is_high_priority_stream. A small strict reader of it. Internal
// to stepsim_core.

#include <string>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::detail {

/// The process-group names Megatron-LM passes to get_nccl_options (current main, plus "tp_exp"
/// of Megatron-Core 0.9, which NVIDIA's MLPerf Training v4.1 GPT-3 file sets).
bool is_megatron_nccl_group(std::string_view name);

/// Reads `text` (the file `file`) into `out`, a group per top-level key. Every problem (syntax,
/// an unknown group or option, a value of the wrong type or out of NCCL's range, an option that
/// stepsim does not model) is appended to `errors`, naming the file, the line and the key
/// (`<group>.<option>`).
void read_nccl_cfg(std::string_view text, const std::string& file,
                   std::vector<NcclGroupOptions>& out, Errors& errors);

}  // namespace stepsim::detail
