#pragma once
// Megatron-LM's --tp-comm-overlap-cfg: a YAML file of Transformer Engine's per-GEMM userbuffers
// settings (megatron/training/initialize.py _initialize_tp_communicators reads it with
// yaml.safe_load and hands it to transformer_engine/pytorch/module/base.py initialize_ub as
// ub_cfgs). A small strict reader of the subset those files use, and the rules of what stepsim
// prices of them. Internal to stepsim_core.

#include <cstdint>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::detail {

/// TE's default method of a userbuffers GEMM (initialize_ub's `methods`): "ring_exchange",
/// "pipeline", "bulk" or "external".
std::string_view ub_default_method(std::string_view gemm);

/// Reads `text` (the file `file`): a mapping of GEMM names (kUbGemmNames) to flat mappings of
/// scalars; comments, blank lines and quoted strings allowed; nothing else of YAML. Writes the
/// priced settings into `gemms`; every problem (syntax, unknown GEMM or setting, a wrong type,
/// a setting TE has and stepsim does not model) is appended to `errors`, naming the file, the
/// line and the key (`<gemm>.<setting>`).
void read_ub_cfg(std::string_view text, const std::string& file,
                 std::array<UbGemmSettings, kUbGemmNames.size()>& gemms, Errors& errors);

}  // namespace stepsim::detail
