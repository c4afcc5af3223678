// Multi-token prediction (--mtp-num-layers, --mtp-loss-scaling-factor): Megatron-LM's rules
// (megatron/training/arguments.py "MTP validation", transformer_config.py) and the
// combinations stepsim does not model yet.

#include <cmath>

#include "check_internal.hpp"

namespace stepsim::detail {

void check_mtp(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (!std::isfinite(m.mtp_loss_scaling_factor) || m.mtp_loss_scaling_factor < 0) {
    check.fail("model.mtp_loss_scaling_factor", "=" + std::to_string(m.mtp_loss_scaling_factor) +
                                                    " must be >= 0 and finite");
  }
  if (m.mtp_num_layers <= 0) return;
  const std::string key = "model.mtp_num_layers";
  const std::string given = "=" + str(m.mtp_num_layers);
  if (m.position_embedding_type == PositionEmbedding::kLearnedAbsolute) {
    check.fail(key, given + " needs position_embedding_type rope or none (arguments.py: "
                            "\"Multi-Token Prediction (MTP) is not supported with "
                            "learned_absolute position embedding type\")");
  }
  const auto not_modelled = [&](const std::string& with) {
    check.fail(key, given + " with " + with + ": not modelled yet");
  };
  if (t.fp8 != Fp8Format::kNone) not_modelled("fp8 (the MTP layers' FP8 casts)");
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    not_modelled("recompute_granularity full (the MTP block's own checkpointing)");
  }
  if (t.context_parallel_size > 1) {
    not_modelled("context_parallel_size > 1 (roll_tensor's boundary exchange over CP)");
  }
  if (t.tp_comm_overlap) not_modelled("tp_comm_overlap (eh_proj's userbuffers)");
  if (t.defer_embedding_wgrad_compute) not_modelled("defer_embedding_wgrad_compute");
  if (t.optimizer_impl != OptimizerImpl::kMegatron) {
    not_modelled("optimizer_impl " + std::string(to_string(t.optimizer_impl)));
  }
}

}  // namespace stepsim::detail
