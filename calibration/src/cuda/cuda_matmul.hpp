#pragma once
// Internal: one cuBLASLt matrix product, planned once (descriptors, layouts and the best
// heuristic algorithm for the workspace) and then enqueued as often as needed, so that the
// timed region holds only the kernel.

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "cuda/cuda_kernels.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// D = op(A) op(B) (+ beta D) in cuBLASLt's column-major terms; `batch` strided products.
struct MatmulShape {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;  ///< D is m x n; k is the inner dimension
  const void* a = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  void* d = nullptr;
  std::int64_t ldd = 0, stride_d = 0;
  std::int64_t batch = 1;
  float beta = 0.0F;
  /// FP8: cuBLASLt's fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM, GemmOp::fast_accum).
  bool fast_accum = false;
  /// FP8: Transformer Engine's block scaling (GemmOp::scaling), fp32 scales as cuBLASLt 12.9+
  /// takes them: block_128x128 scales A (the weight) per 128x128 block (BLK128x128_32F) and B
  /// per 1x128 tile along k (VEC128_32F); block_1x128 (wgrad) scales both per 1x128 tile.
  /// mx_1x32 (MXFP8, Blackwell): both operands an E8M0 byte per 32 values along k
  /// (VEC32_UE8M0), in any layout.
  GemmScaling scaling = GemmScaling::kTensor;
  const void* a_scale = nullptr;  ///< fp32 scales (block), E8M0 bytes (mx_1x32)
  const void* b_scale = nullptr;
};

/// Floats of a block-scaled operand's scales, `outer` x `k` stored k-major, for either
/// scaling (1x128 tiles: ceil(k/128) x outer rounded up to 4; 128x128 blocks: ceil(outer/128)
/// x ceil(k/128) rounded up to 4, as Transformer Engine pads them), rounded up to 64 floats so
/// the next operand's scales stay 256-byte aligned.
std::int64_t block_scale_floats(std::int64_t outer, std::int64_t k);

/// Bytes of an MXFP8 operand's E8M0 scales, `outer` x ceil(k/32) padded to cuBLASLt's 128 x 4
/// tiles as Transformer Engine pads them, rounded up to 256 bytes so the next operand's scales
/// stay aligned.
std::int64_t mx_scale_bytes(std::int64_t outer, std::int64_t k);

/// The element type a GemmOp's dtype is stored in on the device.
inline cuda::ElemType elem_type_of(DType t) {
  switch (t) {
    case DType::kBf16:
      return cuda::ElemType::kBf16;
    case DType::kFp16:
      return cuda::ElemType::kFp16;
    case DType::kFp32:
      return cuda::ElemType::kFp32;
    case DType::kFp8:
      return cuda::ElemType::kFp8E4M3;
    case DType::kFp4:  // never measured: CudaBackend::gemm refuses NVFP4 GEMMs
      break;
  }
  return cuda::ElemType::kBf16;
}

/// The cuBLASLt product that runs `op` over operands a, b and result d. A layout says how
/// Transformer Engine calls it (general_gemm: column-major D[n x m] = op(A)[n x k] op(B)[k x m],
/// the tokens as cuBLAS's n; "TN" = A transposed, B not). Without one: column-major
/// D[m x n] = A[m x k] B[k x n], FP8 as A^T B (cuBLASLt's only FP8 layout on Hopper).
MatmulShape te_matmul_shape(const GemmOp& op, const void* a, const void* b, void* d);

class LtMatmul {
 public:
  /// Operands and result of type `t` (FP8 operands: bf16 result, TN layout only); fp32
  /// compute (TF32 tensor cores for fp32 operands).
  static Result<std::unique_ptr<LtMatmul>> plan(cublasLtHandle_t handle, const MatmulShape& s,
                                                cuda::ElemType t, void* workspace,
                                                std::size_t workspace_bytes);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  /// Enqueues the product on `stream`.
  Status run(cudaStream_t stream) const;

 private:
  LtMatmul() = default;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  MatmulShape shape_;
  /// Block-scaled products of a batch run one after the other (cuBLASLt's block scales
  /// take no batch stride): `loops_` products, operands `a_step_`, `b_step_`, `d_step_`
  /// bytes apart.
  std::int64_t loops_ = 1, a_step_ = 0, b_step_ = 0, d_step_ = 0;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace stepsim::calib
