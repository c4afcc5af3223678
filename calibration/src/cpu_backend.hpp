#pragma once
// CpuBackend: Eigen fp32 GEMMs and attention, a streaming memory-bound kernel, MPI
// collectives and point-to-point. One process per rank; Eigen may use several threads.
// Every GEMM runs in fp32 whatever the op's dtype (Eigen has no fast bf16/fp16 GEMM).

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_world.hpp"
#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  std::string name() const override { return "cpu"; }
  std::string device_name() const override { return device_name_; }
  std::int32_t world_rank() const override { return world_.rank(); }
  std::int32_t world_size() const override { return world_.size(); }

  Result<GroupId> split(std::int32_t color, std::int32_t key) override;
  std::int32_t group_size(GroupId g) const override { return world_.group_size(g); }

  Result<double> gemm(const GemmOp& op) override;
  Result<double> attention(const AttentionOp& op) override;
  Result<double> memory_bound(const MemoryBoundOp& op) override;
  Result<double> collective(const CollectiveOp& op, GroupId group) override;
  Result<double> p2p(const std::vector<P2PRequest>& requests) override;

  Result<double> barrier(GroupId group) override { return world_.barrier(group); }
  double now_s() const override { return world_.now_s(); }
  Result<double> align_clocks() override { return world_.align_clocks(); }
  Result<std::vector<std::vector<double>>> gather_to_root(
      const std::vector<double>& values) override {
    return world_.gather_to_root(values);
  }
  [[noreturn]] void abort_all(int code) override { world_.abort_all(code); }

  /// Element (i, j) of product `b` of the last GEMM (for tests).
  float last_gemm_output(std::int64_t b, std::int64_t i, std::int64_t j) const;

 private:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
  /// Runs `body` warmup + repeats times and returns the median duration of the timed runs.
  template <typename Body>
  std::vector<double> time_repeats(Body&& body) const;

  BackendOptions options_;
  MpiWorld world_;
  std::string device_name_;
  std::vector<Matrix> a_, b_, c_;  ///< GEMM operands, one triple per batch entry
};

}  // namespace stepsim::calib
