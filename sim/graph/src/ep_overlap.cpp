#include "stepsim/graph/ep_overlap.hpp"

#include <algorithm>
#include <string_view>

#include "stepsim/base/assert.hpp"

namespace stepsim::sim {
namespace {

using Indices = std::vector<std::int32_t>;

/// One layer's ops (indices into its action's list), cut into Megatron's submodules.
struct LayerCut {
  Indices pre, comm_in, mlp, mlp_dw, comm_out, rest, rest_dw;
};

/// Ops before the first layer, each layer's run, and the ops after the last layer.
struct Runs {
  Indices head, tail;
  std::vector<Indices> layers;
};

Runs runs_of(const std::vector<Op>& ops) {
  Runs out;
  std::int32_t first = -1, last = -1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].layer < 0) continue;
    if (first < 0) first = static_cast<std::int32_t>(i);
    last = static_cast<std::int32_t>(i);
  }
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(ops.size()); ++i) {
    if (first < 0 || i < first) {
      out.head.push_back(i);
    } else if (i > last) {
      out.tail.push_back(i);
    } else {
      const std::int32_t layer = ops[static_cast<std::size_t>(i)].layer;
      const bool same = i > first && (layer < 0 || layer == ops[static_cast<std::size_t>(
                                                                    out.layers.back().front())]
                                                                .layer);
      if (!same) out.layers.emplace_back();
      out.layers.back().push_back(i);
    }
  }
  return out;
}

std::size_t find(const std::vector<Op>& ops, const Indices& run, std::string_view name,
                 std::size_t from = 0) {
  for (std::size_t k = from; k < run.size(); ++k) {
    if (ops[static_cast<std::size_t>(run[k])].name == name) return k;
  }
  return run.size();
}

/// The first compute op at or after position `k` of `run` (the end of a comm submodule).
std::size_t next_compute(const std::vector<Op>& ops, const Indices& run, std::size_t k) {
  while (k < run.size() && ops[static_cast<std::size_t>(run[k])].stream != Stream::kCompute) ++k;
  return k;
}

void append(Indices& to, const Indices& run, std::size_t from, std::size_t to_end) {
  to.insert(to.end(), run.begin() + static_cast<std::ptrdiff_t>(from),
            run.begin() + static_cast<std::ptrdiff_t>(to_end));
}

/// Moves the weight-gradient kernels of `seg` to `dw`, except one an op after it in `seg`
/// waits for (it must stay before that op).
void split_wgrad(const std::vector<Op>& ops, Indices& seg, Indices& dw) {
  Indices keep;
  for (std::size_t k = 0; k < seg.size(); ++k) {
    const std::int32_t i = seg[k];
    const Op& op = ops[static_cast<std::size_t>(i)];
    bool needed = false;
    for (std::size_t j = k + 1; j < seg.size() && !needed; ++j) {
      const Op& later = ops[static_cast<std::size_t>(seg[j])];
      needed = later.host_waits_for == i ||
               std::find(later.deps.begin(), later.deps.end(), i) != later.deps.end();
    }
    (op.phase == Phase::kBackwardWeight && op.stream == Stream::kCompute && !needed ? dw : keep)
        .push_back(i);
  }
  seg = std::move(keep);
}

/// A forward layer: pre_dispatch, dispatch (comm_in), mlp, combine (comm_out and the
/// unpermute after it, in `rest`). Without a dispatch all-to-all (a dense layer, EP 1) the
/// whole layer is pre_dispatch.
LayerCut cut_forward(const std::vector<Op>& ops, const Indices& run) {
  LayerCut c;
  const std::size_t a = find(ops, run, "moe_dispatch_all_to_all");
  if (a == run.size()) {
    c.pre = run;
    return c;
  }
  const std::size_t m = next_compute(ops, run, a);
  const std::size_t b = find(ops, run, "moe_combine_all_to_all", m);
  const std::size_t r = next_compute(ops, run, b);
  append(c.pre, run, 0, a);
  append(c.comm_in, run, a, m);
  append(c.mlp, run, m, b);
  append(c.comm_out, run, b, r);
  append(c.rest, run, r, run.size());
  return c;
}

/// A backward layer: combine backward (comm_in, with the unpermute backward before it),
/// mlp backward, dispatch backward (comm_out), pre_dispatch backward (rest).
LayerCut cut_backward(const std::vector<Op>& ops, const Indices& run, bool delay_wgrad) {
  LayerCut c;
  const std::size_t a = find(ops, run, "moe_combine_all_to_all_bwd");
  if (a == run.size()) {
    c.rest = run;
  } else {
    const std::size_t m = next_compute(ops, run, a);
    std::size_t d = find(ops, run, "moe_dispatch_probs_all_to_all_bwd", m);
    d = std::min(d, find(ops, run, "moe_dispatch_all_to_all_bwd", m));
    const std::size_t r = next_compute(ops, run, d);
    append(c.comm_in, run, 0, m);
    append(c.mlp, run, m, d);
    append(c.comm_out, run, d, r);
    append(c.rest, run, r, run.size());
  }
  if (delay_wgrad) {
    split_wgrad(ops, c.mlp, c.mlp_dw);
    split_wgrad(ops, c.rest, c.rest_dw);
  }
  return c;
}

class Merger {
 public:
  Merger(const std::vector<Op>& f, const std::vector<Op>& b, bool delay)
      : f_(f), b_(b), delay_(delay) {
    out_.forward_at.assign(f.size(), -1);
    out_.backward_at.assign(b.size(), -1);
    moved_.assign(b.size(), false);
  }

  PairedOps run() {
    const Runs fr = runs_of(f_), br = runs_of(b_);
    take_f(fr.head);
    take_b(br.head);
    const std::size_t paired = std::min(fr.layers.size(), br.layers.size());
    for (std::size_t i = 0; i < paired; ++i) {
      const LayerCut f = cut_forward(f_, fr.layers[i]);
      const LayerCut b = cut_backward(b_, br.layers[i], delay_);
      for (const Indices* dw : {&b.mlp_dw, &b.rest_dw}) {
        for (const std::int32_t k : *dw) moved_[static_cast<std::size_t>(k)] = true;
      }
      take_b(b.comm_in);
      take_f(f.pre);
      take_b(b.mlp);
      take_f(f.comm_in);
      take_b(b.mlp_dw);
      take_b(b.comm_out);
      take_f(f.mlp);
      take_f(f.comm_out);
      take_b(b.rest);
      take_b(b.rest_dw);
      take_f(f.rest);
    }
    for (std::size_t i = paired; i < br.layers.size(); ++i) take_b(br.layers[i]);
    for (std::size_t i = paired; i < fr.layers.size(); ++i) take_f(fr.layers[i]);
    take_f(fr.tail);
    take_b(br.tail);
    STEPSIM_ASSERT(out_.ops.size() == f_.size() + b_.size());
    return std::move(out_);
  }

 private:
  void take_f(const Indices& idx) { take(f_, idx, out_.forward_at, false); }
  void take_b(const Indices& idx) { take(b_, idx, out_.backward_at, true); }

  void take(const std::vector<Op>& ops, const Indices& idx, Indices& at, bool backward) {
    for (const std::int32_t i : idx) {
      Op op = ops[static_cast<std::size_t>(i)];
      const auto here = static_cast<std::int32_t>(out_.ops.size());
      Indices deps;
      for (const std::int32_t d : op.deps) {
        const std::int32_t dep = backward ? resolve(d) : d;
        if (dep < 0) continue;
        const std::int32_t mapped = at[static_cast<std::size_t>(dep)];
        STEPSIM_ASSERT(mapped >= 0 && mapped < here);
        deps.push_back(mapped);
      }
      op.deps = std::move(deps);
      if (op.host_waits_for >= 0) {
        op.host_waits_for = at[static_cast<std::size_t>(op.host_waits_for)];
        STEPSIM_ASSERT(op.host_waits_for >= 0);
      }
      at[static_cast<std::size_t>(i)] = here;
      out_.ops.push_back(std::move(op));
    }
  }

  /// With delay_wgrad, a wait on a split-off weight-gradient kernel is a wait on the compute
  /// before it: ScheduleNode.backward records the slot's event after the dgrad, and
  /// backward_dw (megatron/core/models/common/utils.py) runs outside it, recording nothing.
  std::int32_t resolve(std::int32_t d) const {
    while (d >= 0 && moved_[static_cast<std::size_t>(d)]) {
      --d;
      while (d >= 0 && b_[static_cast<std::size_t>(d)].stream != Stream::kCompute) --d;
    }
    return d;
  }

  const std::vector<Op>& f_;
  const std::vector<Op>& b_;
  bool delay_;
  std::vector<bool> moved_;  ///< backward ops split off as delayed wgrad
  PairedOps out_;
};

ChunkTemplate part_of(const std::vector<Op>& ops, const Indices& at, const ChunkTemplate& merged,
                      const ChunkTemplate& alone) {
  ChunkTemplate t;
  t.ops.reserve(at.size());
  for (std::size_t k = 0; k < at.size(); ++k) {
    const auto i = static_cast<std::size_t>(at[k]);
    const OpTiming& when = merged.ops[i];
    t.ops.push_back(when);
    t.duration_s = std::max(t.duration_s, when.end_s);
    if (ops[i].stream == Stream::kCompute) t.compute_busy_s += when.end_s - when.start_s;
    if (ops[i].workspace_bytes > 0) {
      t.workspace_ops.emplace_back(static_cast<std::int32_t>(k), ops[i].workspace_bytes);
    }
  }
  t.recompute_s = alone.recompute_s;
  t.model_flops = alone.model_flops;
  t.hardware_flops = alone.hardware_flops;
  return t;
}

}  // namespace

PairedOps pair_ops(const std::vector<Op>& forward, const std::vector<Op>& backward,
                   bool delay_wgrad) {
  return Merger(forward, backward, delay_wgrad).run();
}

PairedTemplates split_pair(const PairedOps& paired, const ChunkTemplate& merged,
                           const ChunkTemplate& forward_alone,
                           const ChunkTemplate& backward_alone) {
  PairedTemplates out;
  out.forward = part_of(paired.ops, paired.forward_at, merged, forward_alone);
  out.backward = part_of(paired.ops, paired.backward_at, merged, backward_alone);
  out.forward.exposed_comm_s = merged.exposed_comm_s;
  // Both actions last the pair: Megatron frees the backward's activations layer by layer as
  // the forward stores its own, so the two hand over at the pair's end, not one after the
  // other (the memory timeline frees before it allocates at equal times).
  out.forward.duration_s = merged.duration_s;
  out.backward.duration_s = merged.duration_s;
  return out;
}

}  // namespace stepsim::sim
