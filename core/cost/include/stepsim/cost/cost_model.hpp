#pragma once
// CostModel: turns ops into seconds. Two implementations: RooflineCostModel (system file)
// and CalibratedCostModel (a measured profile). Both are immutable after construction.

#include <string>
#include <string_view>
#include <vector>

#include "stepsim/cost/provenance.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim {

struct HostCosts;
struct MeasuredInterference;
struct KernelSpread;

class CostModel {
 public:
  virtual ~CostModel() = default;

  virtual double gemm_s(const GemmOp& op) const = 0;
  virtual double attention_s(const AttentionOp& op) const = 0;
  virtual double memory_bound_s(const MemoryBoundOp& op) const = 0;
  virtual double collective_s(const CollectiveOp& op) const = 0;
  virtual double p2p_s(const P2POp& op) const = 0;

  /// Short identity for reports ("roofline dgx-a100-80gb", "profile a100-...").
  virtual std::string describe() const = 0;

  /// Notes for the report, e.g. shapes extrapolated beyond the measured range.
  virtual std::vector<std::string> warnings() const { return {}; }

  /// Which parts of the step (GEMMs, attention, memory-bound kernels, collectives,
  /// point-to-point, the host) came from measured samples, another machine's samples,
  /// published microbenchmarks, data sheets or the roofline: of every op priced so far (a
  /// union, whatever order they came in). Empty for models that do not say.
  virtual Provenance provenance() const { return {}; }

  /// The host's cost of issuing kernels, where measured (a profile's "host" section); null:
  /// the host is not modelled (kernels start when their stream and inputs allow).
  virtual const HostCosts* host() const { return nullptr; }

  /// Compute-communication interference measured on the calibrated machine (a profile's
  /// "interference" section); null: the system file's coefficients apply.
  virtual const MeasuredInterference* interference() const { return nullptr; }

  /// The run-to-run spread of kernel times per kernel class, where measured (a profile's
  /// "spread" section, stepsim/cost/spread.hpp); null: synchronisations wait for no one.
  virtual const KernelSpread* spread() const { return nullptr; }

  /// Dispatch on the op's shape.
  double op_s(const Op& op) const;
  double shape_s(const OpShape& shape) const;
};

}  // namespace stepsim
