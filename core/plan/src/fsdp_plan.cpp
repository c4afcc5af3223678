#include "fsdp_plan.hpp"

#include <algorithm>

#include "stepsim/ops/fsdp_units.hpp"

namespace stepsim::detail {

namespace {

std::int64_t padded(std::int64_t elements, std::int64_t ranks) {
  return (elements + ranks - 1) / ranks * ranks;
}

CollectiveOp with(const CollectiveOp& group, CollectiveKind kind, std::int64_t bytes) {
  CollectiveOp c = group;
  c.kind = kind;
  c.bytes = bytes;
  return c;
}

}  // namespace

std::optional<FsdpChunk> fsdp_chunk(const Workload& w, const CollectiveOp& dp_group) {
  const TrainingConfig& t = w.training;
  if (!t.fsdp() || dp_group.group_size <= 1) return std::nullopt;
  const DpSharding s = fsdp_sharding(t);
  if (s == DpSharding::kNoShard || s == DpSharding::kOptim) return std::nullopt;
  FsdpChunk f;
  f.group = dp_group;
  const std::int64_t n = dp_group.group_size;
  const std::int64_t e = bytes_of(t.params_dtype);
  const std::int64_t unit = padded(fsdp_unit_parameters(w), n);
  const std::int64_t root = padded(fsdp_root_parameters(w), n);
  f.unit_gather_bytes = unit * e;
  f.root_gather_bytes = root * e;
  f.unit_reduce_bytes = unit * t.grad_bytes();
  f.root_reduce_bytes = root * t.grad_bytes();
  f.reduce_every_microbatch = true;
  f.gather = s == DpSharding::kOptimGradsParams;
  f.regather_backward = f.gather && (!t.use_torch_fsdp2 || t.torch_fsdp2_reshard_after_forward);
  return f;
}

FsdpGathers::FsdpGathers(const FsdpChunk& f, Phase phase, std::vector<std::int32_t> order)
    : f_(f), phase_(phase), order_(std::move(order)), issued_(order_.size(), -1) {}

std::int32_t FsdpGathers::issue(OpList& ops, std::size_t k) {
  // The unit's gather may start once the unit two places back has released its buffer (the
  // double buffer): that unit's last op is the list's last compute when the one before `k`
  // starts.
  issued_[k] = ops.comm_after("fsdp_param_all_gather", order_[k], phase_, Stream::kDataComm,
                              with(f_.group, CollectiveKind::kAllGather, f_.unit_gather_bytes),
                              ops.last_compute());
  return issued_[k];
}

void FsdpGathers::prime(OpList& ops) {
  if (order_.empty() || issued_[0] >= 0) return;
  issued_[0] = ops.comm_after("fsdp_param_all_gather", order_[0], phase_, Stream::kDataComm,
                              with(f_.group, CollectiveKind::kAllGather, f_.unit_gather_bytes),
                              -1);
}

void FsdpGathers::before(OpList& ops, std::int32_t layer) {
  if (next_ >= order_.size() || order_[next_] != layer) return;  // already gathered
  const std::size_t k = next_++;
  const std::int32_t mine = issued_[k] >= 0 ? issued_[k] : issue(ops, k);
  if (k + 1 < order_.size()) issue(ops, k + 1);  // prefetch the next unit
  ops.wait(mine);
}

void emit_fsdp_root_gather(OpList& ops, const FsdpChunk& f) {
  ops.wait(ops.comm_after("fsdp_root_param_all_gather", -1, Phase::kForward, Stream::kDataComm,
                          with(f.group, CollectiveKind::kAllGather, f.root_gather_bytes), -1));
}

void emit_fsdp_reduce(OpList& ops, const FsdpChunk& f, std::int32_t layer) {
  const bool root = layer < 0;
  ops.collective(root ? "fsdp_root_grad_reduce_scatter" : "fsdp_grad_reduce_scatter", layer,
                 Phase::kBackwardWeight, Stream::kDataComm,
                 with(f.group, CollectiveKind::kReduceScatter,
                      root ? f.root_reduce_bytes : f.unit_reduce_bytes));
}

}  // namespace stepsim::detail
