#pragma once
// CalibratedCostModel: durations from a calibration profile, with the fallbacks it says.
// Details: docs/models.md, "The calibrated cost model".

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

class CalibratedCostModel final : public CostModel {
 public:
  /// `label` names the profile in reports (its file name); `fallback` is the workload's
  /// system, used only for what the profile lacks.
  CalibratedCostModel(std::shared_ptr<const Profile> profile, std::string label,
                      SystemConfig fallback);

  double gemm_s(const GemmOp& op) const override;
  double attention_s(const AttentionOp& op) const override;
  double memory_bound_s(const MemoryBoundOp& op) const override;
  double collective_s(const CollectiveOp& op) const override;
  double p2p_s(const P2POp& op) const override;
  std::string describe() const override;
  std::vector<std::string> warnings() const override;
  Provenance provenance() const override;
  const HostCosts* host() const override {
    return profile_->host.measured() ? &profile_->host : nullptr;
  }
  const MeasuredInterference* interference() const override {
    return profile_->interference.measured() ? &profile_->interference : nullptr;
  }
  const KernelSpread* spread() const override {
    return profile_->spread.measured() ? &profile_->spread : nullptr;
  }

  const Profile& profile() const { return *profile_; }

  /// A point of an interpolation table: log2 coordinates and log(FLOP/s) achieved there.
  struct Point {
    std::array<double, 3> x{};
    double log_flops_per_s = 0;
  };
  /// Samples of one dtype (and, for attention, one direction) ready for interpolation.
  struct Table {
    std::vector<Point> points;
    std::array<double, 3> lo{}, hi{};  ///< measured box
    unsigned origins = 0;  ///< ProvenanceOrigin bits of its samples
  };

 private:
  /// collective_s at NCCL's default channels (what the profile measured).
  double collective_at_defaults_s(const CollectiveOp& op) const;
  /// Achieved FLOP/s at `x` by inverse-distance weighting; clamps `x` into the box and
  /// returns whether it had to.
  static double interpolate(const Table& t, std::array<double, 3> x, bool& clamped);
  /// FLOPs over the interpolated FLOP/s, warning (as `what`: "GEMM", "attention") on clamping.
  double interpolated_s(const Table& t, const std::array<double, 3>& x, double flops,
                        const std::string& what, const std::string& detail) const;
  /// The fit at `bytes`, warning when `bytes` is outside the fit's measured range.
  double linear_s(const LinearFit& f, std::int64_t bytes, const std::string& what) const;
  double attention_from_gemms_s(const AttentionOp& op) const;
  /// A kernel without a window (self-attention or a rectangular block) from the samples.
  double attention_samples_s(const AttentionOp& op) const;
  /// gemm_s, with or without the memory floor (fused attention's tiles have none).
  double gemm_with_floor_s(const GemmOp& op, bool memory_floor) const;
  /// The least time any GEMM takes on the system: the larger of the two floors below (only
  /// the compute floor without `memory_floor`).
  double gemm_roofline_floor_s(const GemmOp& op, bool memory_floor) const;
  /// The GEMM's cost by the wave mechanics (gemm_waves.hpp) in FLOPs at the dtype's peak; its
  /// FLOPs on a system without them. The GEMM tables interpolate each sample's work / seconds.
  double gemm_work(const GemmOp& op, bool memory_floor) const;
  /// Seconds for a GEMM's FLOPs at the system's peak for its dtype (0 when it has none).
  double gemm_compute_floor_s(const GemmOp& op) const;
  /// Seconds to move a GEMM's operands and result once at the system's HBM bandwidth.
  double gemm_memory_floor_s(const GemmOp& op) const;
  void warn(const std::string& category, const std::string& detail) const;

  /// The origin of a sample with `citation` in this profile (ProvenanceOrigin bits).
  unsigned origin_of(const std::string& citation) const;
  /// Fills the tables' origins, memory_origins_, collective_origins_, p2p_origins_ and
  /// borrowed_from_ from the samples' citations (constructor).
  void record_origins();
  void note(PricedPart part, unsigned origins) const { used_.note(part, origins); }

  std::shared_ptr<const Profile> profile_;
  std::string label_;
  SystemConfig fallback_system_;
  RooflineCostModel fallback_;

  using GemmKey = std::tuple<DType, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<GemmKey, double> gemm_measured_;  ///< median seconds per measured shape
  std::map<DType, Table> gemm_tables_;  ///< every sample of a dtype, whatever its layout
  using LayoutGemmKey =
      std::tuple<DType, GemmLayout, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  /// Samples that say their layout, per (dtype, layout): a GEMM of a known layout is priced
  /// from these when the profile has its layout, else from gemm_tables_.
  std::map<LayoutGemmKey, double> gemm_layout_measured_;
  std::map<std::pair<DType, GemmLayout>, Table> gemm_layout_tables_;
  /// FP8 GEMMs of other kernels than the per-tensor, split-accumulating ones of the same
  /// shape (GemmOp::scaling other than kTensor, or fast_accum), apart from every table above.
  using VariantGemmKey =
      std::tuple<GemmScaling, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<VariantGemmKey, double> gemm_variant_measured_;
  std::map<std::pair<GemmScaling, bool>, Table> gemm_variant_tables_;
  using AttentionClass = std::tuple<DType, bool, bool>;  ///< dtype, backward, causal
  std::map<AttentionClass, Table> attention_tables_;
  using AttentionKey = std::tuple<DType, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                                  std::int64_t, std::int64_t>;
  std::map<AttentionKey, double> attention_measured_;  ///< median seconds per measured shape
  using CollectiveKey = std::tuple<CollectiveKind, std::int64_t, std::int64_t>;
  std::map<CollectiveKey, LinearFit> collective_fits_;
  std::map<bool, LinearFit> p2p_fits_;
  /// Measured sizes (median seconds per size, ascending): exact at a measured size, linear
  /// between two, the fit beyond them.
  using SizeCurve = std::map<std::int64_t, double>;
  static std::optional<double> on_curve(const SizeCurve& curve, std::int64_t bytes);
  SizeCurve memory_curve_;
  std::map<CollectiveKey, SizeCurve> collective_curves_;
  std::map<bool, SizeCurve> p2p_curves_;

  /// ProvenanceOrigin bits of the samples behind each price that is not a table's: the
  /// memory curve, each measured collective group, each P2P link class.
  unsigned memory_origins_ = 0;
  std::map<CollectiveKey, unsigned> collective_origins_;
  std::map<bool, unsigned> p2p_origins_;
  /// A collective priced from the samples of group `key`.
  void note_collective(const CollectiveKey& key) const;
  /// Profiles a public profile's samples were copied from (file names), sorted.
  std::set<std::string> borrowed_from_;
  /// What every op priced so far came from (provenance()).
  ProvenanceRecorder used_;

  mutable std::mutex mutex_;
  /// category -> details; rendered by warnings().
  mutable std::map<std::string, std::set<std::string>> warnings_;
};

}  // namespace stepsim
