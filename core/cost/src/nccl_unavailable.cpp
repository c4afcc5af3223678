// The collectives of a job that NCCL_ALGO and NCCL_PROTO leave no algorithm (nccl_model.hpp
// nccl_unavailable_errors). NCCL checks at each call (src/enqueue.cc topoGetAlgoInfo: "No
// algorithm/protocol available for function %s ... NCCL_ALGO was set to %s", ncclInvalidUsage),
// so a restriction only fails a job that runs such a collective.

#include <set>
#include <string>
#include <tuple>

#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/cost/nccl_model.hpp"

namespace stepsim {
namespace {

std::string_view function_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllGather:
      return kNcclFuncNames[kNcclFuncAllGather];
    case CollectiveKind::kReduceScatter:
      return kNcclFuncNames[kNcclFuncReduceScatter];
    default:
      return kNcclFuncNames[kNcclFuncAllReduce];
  }
}

/// Every op list of the plan.
template <typename Visit>
void for_each_op(const WorkloadPlan& plan, Visit&& visit) {
  for (const StagePlan& stage : plan.stages) {
    for (const ChunkPlan& c : stage.chunks) {
      for (const auto* list : {&c.forward, &c.backward, &c.grad_sync, &c.param_gather,
                               &c.backward_wgrad_deferred, &c.deferred_wgrad}) {
        for (const Op& op : *list) visit(op);
      }
    }
    for (const Op& op : stage.step_ops) visit(op);
  }
}

}  // namespace

Errors nccl_unavailable_errors(const Workload& w, const WorkloadPlan& plan) {
  const TrainingConfig& t = w.training;
  const SystemConfig system = nccl_job_system(w);
  if (!system.nccl_enabled.restricted()) return {};
  const bool algo = !t.nccl_algo.empty();
  const std::string key = algo ? "training.nccl_algo" : "training.nccl_proto";
  std::string given = algo ? "=\"" + t.nccl_algo + "\" (NCCL_ALGO)" : "";
  if (!t.nccl_proto.empty()) {
    given += std::string(algo ? " with NCCL_PROTO" : "") + "=\"" + t.nccl_proto + "\"" +
             (algo ? "" : " (NCCL_PROTO)");
  }
  Errors errors;
  std::set<std::tuple<CollectiveKind, CommGroup, std::int64_t, std::int64_t>> seen;
  for_each_op(plan, [&](const Op& op) {
    const auto* c = std::get_if<CollectiveOp>(&op.shape);
    if (c == nullptr || !c->nccl || c->group_size <= 1) return;
    if (c->kind != CollectiveKind::kAllReduce && c->kind != CollectiveKind::kAllGather &&
        c->kind != CollectiveKind::kReduceScatter) {
      return;  // all-to-all: grouped sends and receives, which NCCL_ALGO does not restrict
    }
    if (!seen.emplace(c->kind, c->group, c->group_size, c->nodes_spanned).second) return;
    const auto comm = nccl_comm(system, c->group_size, c->nodes_spanned);
    if (!comm || NcclModel(*comm).available(c->kind)) return;
    errors.push_back(Error{w.source_file, key,
                           given + " leaves NCCL no algorithm and protocol for the " +
                               std::string(function_name(c->kind)) + " of " + op.name + " (" +
                               std::string(to_string(c->group)) + " group of " +
                               std::to_string(c->group_size) + " GPUs on " +
                               std::to_string(c->nodes_spanned) +
                               (c->nodes_spanned > 1 ? " nodes" : " node") +
                               "): NCCL stops (\"No algorithm/protocol available\")"});
  });
  return errors;
}

}  // namespace stepsim
