#include "stepsim/cost/calibrated_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "stepsim/cost/deepep_cost.hpp"
#include "stepsim/cost/gemm_waves.hpp"
#include "stepsim/cost/nccl_model.hpp"

namespace stepsim {

namespace {

constexpr std::size_t kNeighbours = 8;         // samples an interpolation looks at
constexpr std::size_t kDetailsPerWarning = 5;  // details listed per warning category

double log2_of(std::int64_t v) { return std::log2(static_cast<double>(v)); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <typename Key>
std::map<Key, double> medians(const std::map<Key, std::vector<double>>& all) {
  std::map<Key, double> out;
  for (const auto& [key, seconds] : all) out.emplace(key, median(seconds));
  return out;
}

// Adds a point to a table and widens its measured box.
void add_point(CalibratedCostModel::Table& t, const std::array<double, 3>& x, double flops,
               double seconds) {
  if (t.points.empty()) {
    t.lo = x;
    t.hi = x;
  }
  for (std::size_t d = 0; d < 3; ++d) {
    t.lo[d] = std::min(t.lo[d], x[d]);
    t.hi[d] = std::max(t.hi[d], x[d]);
  }
  t.points.push_back({x, std::log(flops / seconds)});
}

std::array<double, 3> gemm_coords(const GemmOp& g) {
  // A batched GEMM is placed as one GEMM of m*batch rows: many independent products fill
  // the GPU the way one tall product does.
  return {log2_of(g.m * g.batch), log2_of(g.n), log2_of(g.k)};
}

std::array<double, 3> attention_coords(const AttentionOp& a) {
  // A context-parallel step attends seq queries to kv_seq() keys: placed at the geometric
  // mean of the two lengths, the square kernel of the same score-tile count.
  const double seq = a.kv_seq() == a.seq ? log2_of(a.seq)
                                         : 0.5 * (log2_of(a.seq) + log2_of(a.kv_seq()));
  // A kernel with values narrower than its keys (multi-latent attention) sits at the mean
  // of the two head dims (its matmuls' mean width).
  return {log2_of(a.batch * a.heads), seq, log2_of((a.head_dim + a.v_dim()) / 2)};
}

/// A sample that prices only GEMMs of its own kind: block-scaled FP8, or FP8 with fast
/// accumulation. NVFP4 samples (dtype fp4, always nv_1x16) form the fp4 tables.
bool is_variant(const GemmSample& s) {
  return s.dtype == DType::kFp8 && (s.scaling != GemmScaling::kTensor || s.fast_accum);
}

std::string variant_text(const GemmOp& g) {
  return g.scaling != GemmScaling::kTensor ? std::string(to_string(g.scaling)) : "fast_accum";
}

std::string gemm_text(const GemmOp& g) {
  return std::string(to_string(g.dtype)) + " m=" + std::to_string(g.m) +
         " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
         " batch=" + std::to_string(g.batch);
}

std::string attention_text(const AttentionOp& a) {
  return std::string(to_string(a.dtype)) + (a.backward ? " backward" : " forward") +
         (a.causal ? " causal" : "") + " batch=" + std::to_string(a.batch) +
         " heads=" + std::to_string(a.heads) + " seq=" + std::to_string(a.seq) +
         (a.kv_seq() != a.seq ? " seq_kv=" + std::to_string(a.kv_seq()) : std::string()) +
         (a.window > 0 ? " window=" + std::to_string(a.window) : std::string()) +
         " head_dim=" + std::to_string(a.head_dim);
}

std::string group_text(CollectiveKind kind, std::int64_t group_size, std::int64_t nodes) {
  return std::string(to_string(kind)) + " over " + std::to_string(group_size) + " ranks on " +
         std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
}

// Ring steps of NCCL's algorithms: what a collective's latency scales with.
double ring_steps(CollectiveKind kind, std::int64_t group_size) {
  const double n = static_cast<double>(group_size);
  return kind == CollectiveKind::kAllReduce ? 2.0 * (n - 1.0) : n - 1.0;
}

}  // namespace

CalibratedCostModel::CalibratedCostModel(std::shared_ptr<const Profile> profile, std::string label,
                                         SystemConfig fallback)
    : profile_(std::move(profile)),
      label_(std::move(label)),
      fallback_system_(fallback),
      fallback_(std::move(fallback)) {
  STEPSIM_ASSERT(profile_ != nullptr);
  std::map<GemmKey, std::vector<double>> gemm_seconds;
  for (const GemmSample& s : profile_->gemm) {
    if (is_variant(s)) continue;  // block-scaled or fast-accumulating: tables of their own
    gemm_seconds[GemmKey{s.dtype, s.m, s.n, s.k, s.batch}].push_back(s.seconds);
  }
  gemm_measured_ = medians(gemm_seconds);
  // Interpolate over one point per distinct shape (its median), so repeats do not weigh more.
  for (const auto& [key, seconds] : gemm_measured_) {
    const auto& [dtype, m, n, k, batch] = key;
    const GemmOp g{m, n, k, batch, dtype};
    add_point(gemm_tables_[dtype], gemm_coords(g), gemm_work(g, true), seconds);
  }
  // Samples that say their layout also form per-layout tables: a linear's forward, dgrad and
  // wgrad run different kernels on the same shape.
  std::map<LayoutGemmKey, std::vector<double>> layout_seconds;
  for (const GemmSample& s : profile_->gemm) {
    if (s.layout == GemmLayout::kUnspecified || is_variant(s)) continue;
    layout_seconds[LayoutGemmKey{s.dtype, s.layout, s.m, s.n, s.k, s.batch}].push_back(s.seconds);
  }
  gemm_layout_measured_ = medians(layout_seconds);
  for (const auto& [key, seconds] : gemm_layout_measured_) {
    const auto& [dtype, layout, m, n, k, batch] = key;
    const GemmOp g{m, n, k, batch, dtype};
    add_point(gemm_layout_tables_[{dtype, layout}], gemm_coords(g), gemm_work(g, true), seconds);
  }
  std::map<VariantGemmKey, std::vector<double>> variant_seconds;
  for (const GemmSample& s : profile_->gemm) {
    if (!is_variant(s)) continue;
    variant_seconds[VariantGemmKey{s.scaling, s.fast_accum, s.m, s.n, s.k, s.batch}].push_back(
        s.seconds);
  }
  gemm_variant_measured_ = medians(variant_seconds);
  for (const auto& [key, seconds] : gemm_variant_measured_) {
    const auto& [scaling, fast, m, n, k, batch] = key;
    const GemmOp g{m, n, k, batch, DType::kFp8};
    add_point(gemm_variant_tables_[{scaling, fast}], gemm_coords(g), gemm_work(g, true), seconds);
  }

  std::map<AttentionKey, std::vector<double>> attention_seconds;
  for (const AttentionSample& s : profile_->attention) {
    const AttentionOp& a = s.op;
    attention_seconds[AttentionKey{a.dtype, a.backward, a.causal, a.batch, a.heads, a.kv_heads,
                                   a.seq, a.head_dim}]
        .push_back(s.seconds);
  }
  attention_measured_ = medians(attention_seconds);
  for (const auto& [key, seconds] : attention_measured_) {
    const auto& [dtype, backward, causal, batch, heads, kv_heads, seq, head_dim] = key;
    const AttentionOp a{batch, heads, kv_heads, seq, head_dim, causal, backward, dtype};
    add_point(attention_tables_[AttentionClass{dtype, backward, causal}], attention_coords(a),
              a.flops(), seconds);
  }

  for (const CollectiveFit& f : profile_->collective_fits) {
    if (f.fit.samples > 0) {
      collective_fits_.emplace(CollectiveKey{f.kind, f.group_size, f.nodes_spanned}, f.fit);
    }
  }
  for (const P2PFit& f : profile_->p2p_fits) {
    if (f.fit.samples > 0) p2p_fits_.emplace(f.inter_node, f.fit);
  }

  std::map<std::int64_t, std::vector<double>> memory_seconds;
  for (const MemorySample& m : profile_->memory) memory_seconds[m.bytes].push_back(m.seconds);
  memory_curve_ = medians(memory_seconds);
  std::map<CollectiveKey, std::map<std::int64_t, std::vector<double>>> collective_seconds;
  for (const CollectiveSample& c : profile_->collectives) {
    collective_seconds[CollectiveKey{c.kind, c.group_size, c.nodes_spanned}][c.bytes].push_back(
        c.seconds);
  }
  for (const auto& [key, by_size] : collective_seconds) collective_curves_[key] = medians(by_size);
  std::map<bool, std::map<std::int64_t, std::vector<double>>> p2p_seconds;
  for (const P2PSample& m : profile_->p2p) p2p_seconds[m.inter_node][m.bytes].push_back(m.seconds);
  for (const auto& [inter, by_size] : p2p_seconds) p2p_curves_[inter] = medians(by_size);

  record_origins();
}

unsigned CalibratedCostModel::origin_of(const std::string& citation) const {
  if (profile_->backend != "public") return kFromMeasured;
  // make_public_profiles.py cites a sample copied from stepsim's own measurement of another
  // machine by that profile's file ("scenarios/profiles/h100-sxm5-80gb-measured.json (...)").
  return citation.starts_with("scenarios/profiles/") ? kFromBorrowed : kFromPublished;
}

void CalibratedCostModel::record_origins() {
  // A sample's origin; a borrowed one names the profile it was copied from.
  const auto origin = [this](const std::string& citation) {
    const unsigned o = origin_of(citation);
    if (o == kFromBorrowed) {
      const std::string path = citation.substr(0, citation.find(' '));
      borrowed_from_.insert(path.substr(path.find_last_of('/') + 1));
    }
    return o;
  };
  // Every sample is in its table (the constructor made one per class it met).
  const auto add = [](auto& tables, const auto& key, unsigned o) {
    const auto found = tables.find(key);
    if (found != tables.end()) found->second.origins |= o;
  };
  for (const GemmSample& s : profile_->gemm) {
    const unsigned o = origin(s.citation);
    if (is_variant(s)) {
      add(gemm_variant_tables_, std::pair{s.scaling, s.fast_accum}, o);
      continue;
    }
    add(gemm_tables_, s.dtype, o);
    if (s.layout != GemmLayout::kUnspecified) {
      add(gemm_layout_tables_, std::pair{s.dtype, s.layout}, o);
    }
  }
  for (const AttentionSample& s : profile_->attention) {
    add(attention_tables_, AttentionClass{s.op.dtype, s.op.backward, s.op.causal},
        origin(s.citation));
  }
  for (const MemorySample& s : profile_->memory) memory_origins_ |= origin(s.citation);
  for (const CollectiveSample& s : profile_->collectives) {
    collective_origins_[CollectiveKey{s.kind, s.group_size, s.nodes_spanned}] |=
        origin(s.citation);
  }
  for (const P2PSample& s : profile_->p2p) p2p_origins_[s.inter_node] |= origin(s.citation);
}

std::optional<double> CalibratedCostModel::on_curve(const SizeCurve& curve, std::int64_t bytes) {
  const auto hi = curve.lower_bound(bytes);
  if (hi == curve.end()) return std::nullopt;
  if (hi->first == bytes) return hi->second;
  if (hi == curve.begin()) return std::nullopt;
  const auto lo = std::prev(hi);
  // Time is affine in size between two measured sizes (latency + bytes / bandwidth).
  const double f =
      static_cast<double>(bytes - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double CalibratedCostModel::interpolate(const Table& t, std::array<double, 3> x, bool& clamped) {
  STEPSIM_ASSERT(!t.points.empty());
  clamped = false;
  for (std::size_t d = 0; d < 3; ++d) {
    const double c = std::clamp(x[d], t.lo[d], t.hi[d]);
    if (c != x[d]) clamped = true;
    x[d] = c;
  }
  // (squared distance, index): ties go to the earlier point, so the result is deterministic.
  std::vector<std::pair<double, std::size_t>> near;
  near.reserve(t.points.size());
  for (std::size_t i = 0; i < t.points.size(); ++i) {
    double d2 = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double diff = t.points[i].x[d] - x[d];
      d2 += diff * diff;
    }
    near.emplace_back(d2, i);
  }
  const std::size_t k = std::min(kNeighbours, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
  if (near.front().first == 0.0) return std::exp(t.points[near.front().second].log_flops_per_s);
  // Weights 1/d^2 (inverse-distance weighting, power 2) of log(FLOP/s): a weighted mean, so
  // the result always lies between the efficiencies of the samples it is made from.
  double sum_w = 0;
  double sum_wv = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double w = 1.0 / near[i].first;
    sum_w += w;
    sum_wv += w * t.points[near[i].second].log_flops_per_s;
  }
  return std::exp(sum_wv / sum_w);
}

double CalibratedCostModel::gemm_s(const GemmOp& op) const { return gemm_with_floor_s(op, true); }

double CalibratedCostModel::gemm_with_floor_s(const GemmOp& op, bool memory_floor) const {
  if (op.flops() <= 0) return 0.0;
  // Every return below but the roofline's is priced from the samples of table `t`.
  const auto sampled = [this](const Table& t, double seconds) {
    note(PricedPart::kGemm, t.origins);
    return seconds;
  };
  if (op.dtype == DType::kFp8 && (op.scaling != GemmScaling::kTensor || op.fast_accum)) {
    const auto table = gemm_variant_tables_.find({op.scaling, op.fast_accum});
    if (table != gemm_variant_tables_.end()) {
      const auto measured = gemm_variant_measured_.find(
          VariantGemmKey{op.scaling, op.fast_accum, op.m, op.n, op.k, op.batch});
      if (measured != gemm_variant_measured_.end()) return sampled(table->second, measured->second);
      const double compute =
          interpolated_s(table->second, gemm_coords(op), gemm_work(op, memory_floor), "GEMM",
                         gemm_text(op) + " " + variant_text(op));
      return sampled(table->second, std::max(compute, gemm_roofline_floor_s(op, memory_floor)));
    }
    GemmOp plain = op;
    if (op.scaling == GemmScaling::kMx1x32) {
      // No measurement says how MXFP8 kernels compare with per-tensor ones: said.
      warn(
          "no MXFP8 GEMM samples in the profile (stepsim calibrate --fp8 measures them on "
          "Blackwell): per-tensor FP8 samples used",
          std::string(to_string(op.scaling)));
      plain.scaling = GemmScaling::kTensor;
      plain.layout = GemmLayout::kTN;
    } else if (op.scaling != GemmScaling::kTensor) {
      // Per-tensor FP8 kernels run faster than block-scaled ones (one H100, products over
      // 100 GFLOP: 1x128 x 128x128 a median 8% slower, 1x128 x 1x128 43%;
      // profiles/README.md): said, never silent.
      warn(
          "no block-scaled FP8 GEMM samples in the profile (stepsim calibrate --fp8 measures "
          "them on Hopper): per-tensor FP8 samples used, an optimistic price",
          std::string(to_string(op.scaling)));
      plain.scaling = GemmScaling::kTensor;
    } else {
      // Split accumulation is the slower of the two: a pessimistic price, said.
      warn(
          "no fast-accumulation FP8 GEMM samples in the profile (stepsim calibrate --fp8 "
          "measures them on GPUs): split-accumulation FP8 samples used, a pessimistic price",
          "fast_accum");
      plain.fast_accum = false;
    }
    return gemm_with_floor_s(plain, memory_floor);
  }
  if (op.layout != GemmLayout::kUnspecified) {
    const auto table = gemm_layout_tables_.find({op.dtype, op.layout});
    if (table != gemm_layout_tables_.end()) {
      const auto measured = gemm_layout_measured_.find(
          LayoutGemmKey{op.dtype, op.layout, op.m, op.n, op.k, op.batch});
      if (measured != gemm_layout_measured_.end()) return sampled(table->second, measured->second);
      const double compute =
          interpolated_s(table->second, gemm_coords(op), gemm_work(op, memory_floor), "GEMM",
                         gemm_text(op) + " " + std::string(to_string(op.layout)));
      return sampled(table->second, std::max(compute, gemm_roofline_floor_s(op, memory_floor)));
    }
  }
  // No samples of the op's layout: every sample of its dtype, whatever its layout.
  const auto measured = gemm_measured_.find(GemmKey{op.dtype, op.m, op.n, op.k, op.batch});
  if (measured != gemm_measured_.end()) return sampled(gemm_tables_.at(op.dtype), measured->second);
  auto table = gemm_tables_.find(op.dtype);
  if (table == gemm_tables_.end() && (op.dtype == DType::kFp16 || op.dtype == DType::kBf16)) {
    // fp16 and bf16 run on the same tensor-core path at the same peak (A100: 312 TFLOPS
    // each, H100 SXM: 989 each, in NVIDIA's data sheets): one stands in for the other.
    const DType twin = op.dtype == DType::kFp16 ? DType::kBf16 : DType::kFp16;
    table = gemm_tables_.find(twin);
    if (table != gemm_tables_.end()) {
      warn("no GEMM samples for this dtype in the profile: the samples of its 16-bit twin used",
           std::string(to_string(op.dtype)) + " from " + std::string(to_string(twin)));
    }
  }
  if (table == gemm_tables_.end()) {
    warn("no GEMM samples for this dtype in the profile: roofline of " + fallback_.describe() +
             " used",
         std::string(to_string(op.dtype)));
    note(PricedPart::kGemm, kFromRoofline);
    return fallback_.gemm_s(op);
  }
  const double interpolated = interpolated_s(table->second, gemm_coords(op),
                                             gemm_work(op, memory_floor), "GEMM", gemm_text(op));
  return sampled(table->second, std::max(interpolated, gemm_roofline_floor_s(op, memory_floor)));
}

// The least time any GEMM takes on the workload's system, whatever its samples say: its FLOPs
// at the dtype's peak and its operands and result moved once through HBM. An interpolated
// efficiency is a weighted mean of its neighbours', so a skinny shape (small n or k) next to
// large compute-bound samples, or a shape clamped into the measured box, would otherwise run
// faster than reading its operands allows.
double CalibratedCostModel::gemm_roofline_floor_s(const GemmOp& op, bool memory_floor) const {
  return std::max(gemm_compute_floor_s(op), memory_floor ? gemm_memory_floor_s(op) : 0.0);
}

// What a GEMM costs the GPU by the mechanism of gemm_waves.hpp, in FLOPs at the dtype's peak
// (its FLOPs where the system does not say enough for the mechanism: a CPU). The tables hold
// each sample's log(work / seconds), its efficiency against the mechanism, so a shape the profile
// did not measure takes its neighbours' efficiency times its own tiles, waves, split-K, memory
// floor and launches: anchored on the samples, not replaced by the mechanism. Without
// `memory_floor` (matmuls inside a fused attention kernel), the HBM term is left out.
double CalibratedCostModel::gemm_work(const GemmOp& op, bool memory_floor) const {
  if (!gemm_waves_apply(fallback_system_, op.dtype)) return op.flops();
  const GemmWaves w = gemm_waves(op, fallback_system_);
  const double seconds =
      (memory_floor ? std::max(w.compute_s, w.memory_s) : w.compute_s) + w.reduce_s + w.launch_s;
  return seconds * fallback_system_.peak_flops(op.dtype);
}

double CalibratedCostModel::gemm_compute_floor_s(const GemmOp& op) const {
  const double peak = fallback_system_.peak_flops(op.dtype);
  return peak > 0 ? op.flops() / peak : 0.0;
}

// A bound, not an estimate: the system file's HBM bandwidth (the data sheet's), which no kernel
// exceeds. The profile's memory fit is what one streaming kernel reached, not a limit on others.
double CalibratedCostModel::gemm_memory_floor_s(const GemmOp& op) const {
  const double bandwidth = fallback_system_.hbm_bandwidth_bytes_per_s;
  return bandwidth > 0 ? gemm_bytes_of(op.dtype, op.m, op.n, op.k, op.batch) / bandwidth : 0.0;
}

double CalibratedCostModel::attention_s(const AttentionOp& op) const {
  if (op.flops() <= 0) return 0.0;
  if (op.window > 0) {
    // Sliding-window attention: Transformer Engine's fused kernels (cuDNN's, flash-attn's)
    // visit only the score tiles that meet the causal band, rows of at most `window` keys.
    // Priced as context parallelism's rectangular blocks are: the full (unmasked) samples'
    // efficiency at the rectangle of the band's score count (seq queries x scores / seq keys),
    // times the band's FLOPs (AttentionOp::flops).
    const double band = op.scores();
    AttentionOp rect = op;
    rect.window = 0;
    rect.causal = false;
    rect.seq_kv = std::max<std::int64_t>(
        1, std::llround(band / static_cast<double>(std::max<std::int64_t>(1, op.seq))));
    return attention_samples_s(rect) * op.flops() / rect.flops();
  }
  return attention_samples_s(op);
}

double CalibratedCostModel::attention_samples_s(const AttentionOp& op) const {
  if (op.flops() <= 0) return 0.0;
  // Profiles measure self-attention (seq_kv = seq); a rectangular kernel is interpolated.
  const auto measured =
      op.kv_seq() != op.seq || op.v_dim() != op.head_dim
          ? attention_measured_.end()
          : attention_measured_.find(AttentionKey{op.dtype, op.backward, op.causal, op.batch,
                                                  op.heads, op.kv_heads, op.seq, op.head_dim});
  if (measured != attention_measured_.end()) {
    note(PricedPart::kAttention,
         attention_tables_.at(AttentionClass{op.dtype, op.backward, op.causal}).origins);
    return measured->second;
  }
  auto table = attention_tables_.find(AttentionClass{op.dtype, op.backward, op.causal});
  if (table == attention_tables_.end() && op.dtype != DType::kFp32) {
    // fp16 and bf16 attention kernels run on the same tensor cores at the same peak, as the
    // GEMMs above: one stands in for the other.
    const DType twin = op.dtype == DType::kFp16 ? DType::kBf16 : DType::kFp16;
    table = attention_tables_.find(AttentionClass{twin, op.backward, op.causal});
    if (table != attention_tables_.end()) {
      warn(
          "no attention samples for this dtype in the profile: the samples of its 16-bit twin "
          "used",
          std::string(to_string(op.dtype)) + " from " + std::string(to_string(twin)) +
              (op.backward ? " backward" : " forward") + (op.causal ? " causal" : ""));
    }
  }
  if (table == attention_tables_.end()) return attention_from_gemms_s(op);
  note(PricedPart::kAttention, table->second.origins);
  return interpolated_s(table->second, attention_coords(op), op.flops(), "attention",
                        attention_text(op));
}

double CalibratedCostModel::interpolated_s(const Table& t, const std::array<double, 3>& x,
                                           double flops, const std::string& what,
                                           const std::string& detail) const {
  bool clamped = false;
  const double flops_per_s = interpolate(t, x, clamped);
  if (clamped) {
    // One measured shape has no range to be beyond: every shape of its class runs at its
    // efficiency (GEMMs with the memory floor beside), which is what the profile knows, and
    // the note says so (the A100 public profile: no per-shape data is public).
    warn(t.points.size() == 1
             ? "the profile measured one " + what +
                   " shape of this class: every other shape priced at its efficiency"
             : what + " shape beyond the profile's measured range: efficiency clamped at its edge",
         detail);
  }
  return flops / flops_per_s;
}

double CalibratedCostModel::attention_from_gemms_s(const AttentionOp& op) const {
  note(PricedPart::kAttention, kFromAsGemms);
  warn(
      "no attention samples in the profile: attention costed as its matmuls (batched GEMMs) "
      "plus the HBM traffic of its inputs and outputs",
      std::string(to_string(op.dtype)) + (op.backward ? " backward" : " forward") +
          (op.causal ? " causal" : ""));
  const std::int64_t bh = op.batch * op.heads;
  // Forward: S = Q K^T (scores shape) and O = P V (values shape) per head. Backward:
  // dP = dO V^T (scores shape), dV = P^T dO, dQ = dS K, dK = dS^T Q (values shape), and a
  // fused kernel recomputes S = Q K^T first: five matmuls, though AttentionOp::flops counts
  // the four Megatron counts.
  // The matmuls run inside the fused kernel's tiles: no memory floor for the s x s scores,
  // which never reach HBM (the peak still bounds them); the kernel's own traffic is added below.
  const auto tile_s = [this](const GemmOp& g) { return gemm_with_floor_s(g, false); };
  const GemmOp scores{op.seq, op.kv_seq(), op.head_dim, bh, op.dtype};
  const GemmOp values{op.seq, op.head_dim, op.kv_seq(), bh, op.dtype};
  double seconds =
      op.backward ? 2.0 * tile_s(scores) + 3.0 * tile_s(values) : tile_s(scores) + tile_s(values);
  if (op.v_dim() != op.head_dim) {
    // Values narrower than keys: dP = dO V^T and O = P V, dV = P^T dO have the value width.
    const GemmOp scores_v{op.seq, op.kv_seq(), op.v_dim(), bh, op.dtype};
    const GemmOp values_v{op.seq, op.v_dim(), op.kv_seq(), bh, op.dtype};
    seconds = op.backward ? tile_s(scores) + tile_s(scores_v) + tile_s(values_v) +
                                2.0 * tile_s(values)
                          : tile_s(scores) + tile_s(values_v);
  }
  // A fused kernel keeps the s x s scores on chip: HBM sees Q, K, V and O (forward), and
  // Q, K, V, O, dO, dQ, dK, dV (backward); Q and K have head_dim, V and O the value dim.
  const std::int64_t widths = op.head_dim + op.v_dim();
  const std::int64_t q_bytes = bytes_of(op.dtype) * op.batch * op.heads * op.seq * widths;
  const std::int64_t kv_bytes = bytes_of(op.dtype) * op.batch * op.kv_heads * op.kv_seq() * widths;
  const std::int64_t traffic = (op.backward ? 2 : 1) * (q_bytes + kv_bytes);
  return seconds + memory_bound_s(MemoryBoundOp{traffic});
}

double CalibratedCostModel::linear_s(const LinearFit& f, std::int64_t bytes,
                                     const std::string& what) const {
  if (bytes < f.min_bytes || bytes > f.max_bytes) {
    warn("size outside the profile's measured range: its latency/bandwidth fit extrapolated",
         what + " of " + std::to_string(bytes) + " bytes (measured " + std::to_string(f.min_bytes) +
             ".." + std::to_string(f.max_bytes) + ")");
  }
  return f.latency_s + static_cast<double>(bytes) / f.bandwidth_bytes_per_s;
}

double CalibratedCostModel::memory_bound_s(const MemoryBoundOp& op) const {
  if (op.bytes <= 0) return 0.0;
  if (profile_->memory_fit.samples == 0) {
    warn(
        "no memory-bandwidth samples in the profile: roofline of " + fallback_.describe() + " used",
        "memory-bound kernels");
    note(PricedPart::kMemoryBound, kFromRoofline);
    return fallback_.memory_bound_s(op);
  }
  note(PricedPart::kMemoryBound, memory_origins_ != 0 ? memory_origins_ : origin_of(""));
  if (const auto measured = on_curve(memory_curve_, op.bytes)) return *measured;
  return linear_s(profile_->memory_fit, op.bytes, "memory-bound kernel");
}

// The fit used for a collective that was not measured: same kind first, then the same link
// class (inside one node vs across nodes: never one for the other; across nodes only with the
// same members per node), then the nearest group in log2(group size) + log2(ranks per node). The
// bus bandwidth nccl-tests reports is what carries over between group sizes and kinds, so the fit's
// algorithm bandwidth is turned into bus bandwidth with its own factor and back with the query's;
// the latency scales with the ring's steps.
double CalibratedCostModel::collective_s(const CollectiveOp& op) const {
  // Measured (or modelled) at NCCL's default channels; the job's channel limits
  // (NCCL_MIN/MAX_NCHANNELS, Megatron's per-group communicator options) scale it.
  return collective_at_defaults_s(op) * nccl_channel_factor(fallback_system_, op);
}

double CalibratedCostModel::collective_at_defaults_s(const CollectiveOp& op) const {
  if (op.kind == CollectiveKind::kDeepEpDispatch || op.kind == CollectiveKind::kDeepEpCombine) {
    // DeepEP's kernels are not NCCL's and calibrate does not run them: its own measured
    // fractions of the system's links (deepep_cost.hpp).
    note(PricedPart::kCollective, kFromDeepEp);
    return deepep_s(fallback_system_, op);
  }
  if (op.group_size <= 1 || op.bytes <= 0) return 0.0;
  const std::string what = group_text(op.kind, op.group_size, op.nodes_spanned);
  // Measured with NCCL's default (every algorithm and protocol, NVLS where supported): with
  // NCCL_NVLS_ENABLE=0, NCCL_ALGO or NCCL_PROTO, NCCL's own model of the change scales the
  // measurement (1 where NCCL would pick the same algorithm and protocol anyway).
  const double tuning = nccl_tuning_factor(fallback_system_, op);
  const auto exact = collective_fits_.find(CollectiveKey{op.kind, op.group_size, op.nodes_spanned});
  if (exact != collective_fits_.end()) {
    note_collective(exact->first);
    const auto curve = collective_curves_.find(exact->first);
    if (curve != collective_curves_.end()) {
      if (const auto measured = on_curve(curve->second, op.bytes)) return *measured * tuning;
    }
    return linear_s(exact->second, op.bytes, what) * tuning;
  }
  const bool all_to_all = op.kind == CollectiveKind::kAllToAll;
  if (all_to_all &&
      std::none_of(collective_fits_.begin(), collective_fits_.end(), [](const auto& entry) {
        return std::get<0>(entry.first) == CollectiveKind::kAllToAll;
      })) {
    // NCCL's tuning model has no all-to-all (it runs it as grouped sends and receives), and
    // no other collective stands in for one: the roofline of the system file.
    warn("no all-to-all samples in the profile: roofline of " + fallback_.describe() + " used",
         what);
    note(PricedPart::kCollective, kFromRoofline);
    return fallback_.collective_s(op);
  }
  // A group the profile did not measure, on a platform NCCL runs on: NCCL's own model of the
  // algorithm and protocol it would pick there (nccl_model.hpp), not a rescaled neighbour.
  // All-to-all has no such model: the nearest measured all-to-all below.
  if (auto comm = all_to_all ? std::nullopt
                             : nccl_comm(fallback_system_, op.group_size, op.nodes_spanned)) {
    if (!op.nccl) comm->enabled = NcclEnabled{};  // NCCL_ALGO/PROTO reach NCCL's kernels only
    const NcclChoice choice = NcclModel(*comm).choose(op.kind, op.bytes);
    warn("collective group not measured in the profile: NCCL's own tuning model used",
         what + " (" + std::string(to_string(choice.algo)) + "/" +
             std::string(to_string(choice.proto)) + ")");
    note(PricedPart::kCollective, kFromNcclModel);
    return choice.seconds;
  }

  const double per_node =
      static_cast<double>(op.group_size) / static_cast<double>(op.nodes_spanned);
  const CollectiveKey* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const auto& [key, fit] : collective_fits_) {
    const auto& [kind, group_size, nodes] = key;
    if ((nodes > 1) != (op.nodes_spanned > 1)) continue;
    if (all_to_all && kind != CollectiveKind::kAllToAll) continue;
    const double fit_per_node = static_cast<double>(group_size) / static_cast<double>(nodes);
    // Across nodes a group's bus bandwidth is its members' share of the NICs, which grows
    // with the members per node: only a group with as many members per node carries over.
    if (nodes > 1 && fit_per_node != per_node) continue;
    const double distance = (kind == op.kind ? 0.0 : 1000.0) +
                            std::abs(log2_of(group_size) - log2_of(op.group_size)) +
                            std::abs(std::log2(fit_per_node) - std::log2(per_node));
    if (distance < best_distance) {
      best_distance = distance;
      best = &key;
    }
  }
  if (best == nullptr) {
    warn("no collective samples for this link class in the profile: roofline of " +
             fallback_.describe() + " used",
         what);
    note(PricedPart::kCollective, kFromRoofline);
    return fallback_.collective_s(op);
  }
  note_collective(*best);
  const auto& [kind, group_size, nodes] = *best;
  const LinearFit& fit = collective_fits_.at(*best);
  warn(
      "collective group not in the profile: nearest measured group used, rescaled by "
      "nccl-tests' bus-bandwidth factor",
      what + " from " + group_text(kind, group_size, nodes));
  LinearFit rescaled = fit;
  rescaled.latency_s *= ring_steps(op.kind, op.group_size) / ring_steps(kind, group_size);
  if (all_to_all && op.nodes_spanned > 1) {
    // An all-to-all across nodes is bound by the part each rank sends off its node through
    // its own NIC share (roofline_cost_model.cpp): with as many members per node, that share
    // is the measured group's, and the bytes scale with the off-node fraction (n-k)/n, not
    // with (n-1)/n.
    rescaled.bandwidth_bytes_per_s *= all_to_all_off_node_fraction(group_size, nodes) /
                                      all_to_all_off_node_fraction(op.group_size, op.nodes_spanned);
  } else {
    rescaled.bandwidth_bytes_per_s *=
        bus_factor(kind, group_size) / bus_factor(op.kind, op.group_size);
  }
  return linear_s(rescaled, op.bytes, what) * tuning;
}

double CalibratedCostModel::p2p_s(const P2POp& op) const {
  if (op.bytes <= 0) return 0.0;
  const std::string what = op.inter_node ? "inter-node p2p" : "intra-node p2p";
  const auto fit = p2p_fits_.find(op.inter_node);
  if (fit == p2p_fits_.end()) {
    warn("no p2p samples for this link class in the profile: roofline of " + fallback_.describe() +
             " used",
         what);
    note(PricedPart::kP2P, kFromRoofline);
    return fallback_.p2p_s(op);
  }
  const auto origins = p2p_origins_.find(op.inter_node);
  note(PricedPart::kP2P, origins != p2p_origins_.end() ? origins->second : origin_of(""));
  const auto curve = p2p_curves_.find(op.inter_node);
  if (curve != p2p_curves_.end()) {
    if (const auto measured = on_curve(curve->second, op.bytes)) return *measured;
  }
  return linear_s(fit->second, op.bytes, what);
}

std::string CalibratedCostModel::describe() const {
  std::string out = "profile " + label_ + " (" + profile_->machine + ", " + profile_->source + ")";
  if (const HostCosts* h = host()) {
    // The host's issue costs shape the step (sim/graph/src/build_step.cpp): say so where the cost
    // model is named.
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "; host issues a kernel in %.1f us forward, %.1f us backward, wakes in %.1f us",
                  h->forward_op_issue_s * 1e6, h->backward_op_issue_s * 1e6, h->sync_s * 1e6);
    out += buf;
    // A host borrowed from another profile (the public ones: make_public_profiles.py) names
    // the machine it was measured on: the citation's file name and parenthesis.
    constexpr std::string_view kBorrowed = "borrowed from scenarios/profiles/";
    if (h->citation.starts_with(kBorrowed)) {
      const std::size_t close = h->citation.find(')');
      out += " (host borrowed from " +
             h->citation.substr(kBorrowed.size(), close == std::string::npos
                                                      ? std::string::npos
                                                      : close + 1 - kBorrowed.size()) +
             ")";
    }
  }
  return out;
}

void CalibratedCostModel::note_collective(const CollectiveKey& key) const {
  const auto found = collective_origins_.find(key);
  note(PricedPart::kCollective, found != collective_origins_.end() ? found->second : origin_of(""));
}

Provenance CalibratedCostModel::provenance() const {
  Provenance p;
  p.parts = used_.used();
  p.cost_data = "profile";
  if (std::any_of(p.parts.begin(), p.parts.end(),
                  [](unsigned o) { return (o & kFromMeasured) != 0; })) {
    // "vm: NVIDIA H100 80GB HBM3, 2026-11-28": the machine, and the day (of an ISO 8601 date).
    p.measured_on = profile_->machine +
                    (profile_->date.empty() ? "" : ", " + profile_->date.substr(0, 10));
  }
  if (std::any_of(p.parts.begin(), p.parts.end(),
                  [](unsigned o) { return (o & kFromBorrowed) != 0; })) {
    p.borrowed_from.assign(borrowed_from_.begin(), borrowed_from_.end());
  }
  if (const HostCosts* h = host()) {
    read_host_citation(h->citation, profile_->backend == "public", p);
  }
  if (const KernelSpread* s = spread()) {
    p.spread = "measured over " + std::to_string(s->repeats) + " repeats";
  }
  return p;
}

void CalibratedCostModel::warn(const std::string& category, const std::string& detail) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  warnings_[category].insert(detail);
}

std::vector<std::string> CalibratedCostModel::warnings() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [category, details] : warnings_) {
    std::string line = category + ": ";
    std::size_t listed = 0;
    for (const std::string& d : details) {
      if (listed == kDetailsPerWarning) break;
      line += (listed++ == 0 ? "" : "; ") + d;
    }
    if (details.size() > listed) {
      line += "; and " + std::to_string(details.size() - listed) + " more";
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace stepsim
