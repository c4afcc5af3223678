// Writing calibration profiles (profile.hpp) as JSON, in the layout profile_io.cpp reads.
// Doubles are written in nlohmann's shortest round-trip form, so Profile -> JSON -> Profile
// is exact; keys keep a fixed order, so equal profiles give byte-identical files.

#include <nlohmann/json.hpp>
#include <string>

#include "stepsim/cost/profile.hpp"

namespace stepsim {

namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson fit_json(const LinearFit& f) {
  OrderedJson j;
  j["latency_s"] = f.latency_s;
  j["bandwidth_bytes_per_s"] = f.bandwidth_bytes_per_s;
  j["rms_relative_error"] = f.rms_relative_error;
  j["samples"] = f.samples;
  j["min_bytes"] = f.min_bytes;
  j["max_bytes"] = f.max_bytes;
  return j;
}

void put_citation(OrderedJson& j, const std::string& citation) {
  if (!citation.empty()) j["citation"] = citation;
}

OrderedJson interference_json(const MeasuredInterference& m) {
  OrderedJson o;
  o["compute_slowdown"] = m.compute_slowdown;
  o["collective_slowdown"] = m.collective_slowdown;
  o["gemm"] = m.gemm;
  o["collective"] = m.collective;
  if (!m.posted.empty()) {
    o["p2p_post_latency_s"] = m.p2p_post_latency_s;
    o["collective_post_latency_s"] = m.collective_post_latency_s;
    o["posted"] = m.posted;
  }
  return o;
}

OrderedJson spread_json(const KernelSpread& s) {
  OrderedJson o;
  o["gemm_cv"] = s.gemm_cv;
  o["attention_cv"] = s.attention_cv;
  o["memory_cv"] = s.memory_cv;
  o["collective_cv"] = s.collective_cv;
  o["p2p_cv"] = s.p2p_cv;
  o["repeats"] = s.repeats;
  o["citation"] = s.citation;
  return o;
}

}  // namespace

std::string profile_to_json(const Profile& p) {
  OrderedJson j;
  j["format_version"] = p.format_version;
  j["machine"] = p.machine;
  j["backend"] = p.backend;
  j["date"] = p.date;
  j["source"] = p.source;
  j["notes"] = p.notes;
  j["world_size"] = p.world_size;
  j["gemm"] = OrderedJson::array();
  for (const GemmSample& s : p.gemm) {
    OrderedJson e;
    e["m"] = s.m;
    e["n"] = s.n;
    e["k"] = s.k;
    e["batch"] = s.batch;
    e["dtype"] = to_string(s.dtype);
    if (s.layout != GemmLayout::kUnspecified) e["layout"] = to_string(s.layout);
    if (s.scaling != GemmScaling::kTensor) e["scaling"] = to_string(s.scaling);
    if (s.fast_accum) e["fast_accum"] = true;
    e["seconds"] = s.seconds;
    put_citation(e, s.citation);
    j["gemm"].push_back(std::move(e));
  }
  j["attention"] = OrderedJson::array();
  for (const AttentionSample& s : p.attention) {
    OrderedJson e;
    e["batch"] = s.op.batch;
    e["heads"] = s.op.heads;
    e["kv_heads"] = s.op.kv_heads;
    e["seq"] = s.op.seq;
    e["head_dim"] = s.op.head_dim;
    e["causal"] = s.op.causal;
    e["backward"] = s.op.backward;
    e["dtype"] = to_string(s.op.dtype);
    e["seconds"] = s.seconds;
    put_citation(e, s.citation);
    j["attention"].push_back(std::move(e));
  }
  j["memory"] = OrderedJson::array();
  for (const MemorySample& s : p.memory) {
    OrderedJson e;
    e["bytes"] = s.bytes;
    e["seconds"] = s.seconds;
    put_citation(e, s.citation);
    j["memory"].push_back(std::move(e));
  }
  j["collectives"] = OrderedJson::array();
  for (const CollectiveSample& s : p.collectives) {
    OrderedJson e;
    e["kind"] = to_string(s.kind);
    e["group_size"] = s.group_size;
    e["nodes_spanned"] = s.nodes_spanned;
    e["bytes"] = s.bytes;
    e["seconds"] = s.seconds;
    put_citation(e, s.citation);
    j["collectives"].push_back(std::move(e));
  }
  j["p2p"] = OrderedJson::array();
  for (const P2PSample& s : p.p2p) {
    OrderedJson e;
    e["inter_node"] = s.inter_node;
    e["bytes"] = s.bytes;
    e["seconds"] = s.seconds;
    put_citation(e, s.citation);
    j["p2p"].push_back(std::move(e));
  }
  j["memory_fit"] = fit_json(p.memory_fit);
  j["collective_fits"] = OrderedJson::array();
  for (const CollectiveFit& f : p.collective_fits) {
    OrderedJson e;
    e["kind"] = to_string(f.kind);
    e["group_size"] = f.group_size;
    e["nodes_spanned"] = f.nodes_spanned;
    e["fit"] = fit_json(f.fit);
    j["collective_fits"].push_back(std::move(e));
  }
  j["p2p_fits"] = OrderedJson::array();
  for (const P2PFit& f : p.p2p_fits) {
    OrderedJson e;
    e["inter_node"] = f.inter_node;
    e["fit"] = fit_json(f.fit);
    j["p2p_fits"].push_back(std::move(e));
  }
  if (p.host.measured()) {
    const HostCosts& h = p.host;
    OrderedJson host;
    host["op_issue_s"] = h.op_issue_s;
    host["forward_op_issue_s"] = h.forward_op_issue_s;
    host["backward_op_issue_s"] = h.backward_op_issue_s;
    host["kernel_gap_s"] = h.kernel_gap_s;
    host["sync_s"] = h.sync_s;
    if (!h.ops.empty()) {
      OrderedJson ops = OrderedJson::object();
      for (const auto& [name, seconds] : h.ops) ops[name] = seconds;
      host["ops"] = std::move(ops);
    }
    if (h.layer_forward_kernels > 0) {
      host["layer"] = {{"forward_kernels", h.layer_forward_kernels},
                       {"backward_kernels", h.layer_backward_kernels},
                       {"forward_host_s", h.layer_forward_host_s},
                       {"backward_host_s", h.layer_backward_host_s}};
    }
    host["citation"] = h.citation;
    j["host"] = std::move(host);
  }
  if (p.interference.measured()) j["interference"] = interference_json(p.interference);
  if (p.spread.measured()) j["spread"] = spread_json(p.spread);
  return j.dump(2) + "\n";
}

}  // namespace stepsim
