#include "cuda/cuda_matmul.hpp"

#include <algorithm>

#include "cuda/cuda_check.hpp"

namespace stepsim::calib {
namespace {

cudaDataType_t data_type(cuda::ElemType t) {
  switch (t) {
    case cuda::ElemType::kBf16:
      return CUDA_R_16BF;
    case cuda::ElemType::kFp16:
      return CUDA_R_16F;
    case cuda::ElemType::kFp32:
      return CUDA_R_32F;
    case cuda::ElemType::kFp8E4M3:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

cublasStatus_t make_layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, std::int64_t rows,
                           std::int64_t cols, std::int64_t ld, std::int64_t batch,
                           std::int64_t stride) {
  cublasStatus_t s = cublasLtMatrixLayoutCreate(out, type, static_cast<std::uint64_t>(rows),
                                                static_cast<std::uint64_t>(cols), ld);
  if (s != CUBLAS_STATUS_SUCCESS || batch <= 1) return s;
  const auto count = static_cast<std::int32_t>(batch);
  s = cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                       sizeof count);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof stride);
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

std::int64_t block_scale_floats(std::int64_t outer, std::int64_t k) {
  const std::int64_t k_blocks = (k + 127) / 128;
  const std::int64_t tiles = k_blocks * round_up(outer, 4);
  const std::int64_t blocks = (outer + 127) / 128 * round_up(k_blocks, 4);
  return round_up(std::max(tiles, blocks), 64);
}

std::int64_t mx_scale_bytes(std::int64_t outer, std::int64_t k) {
  return round_up(round_up(outer, 128) * round_up((k + 31) / 32, 4), 256);
}

MatmulShape te_matmul_shape(const GemmOp& op, const void* a, const void* b, void* d) {
  MatmulShape s;
  const bool te = op.layout != GemmLayout::kUnspecified;
  s.trans_a = te ? op.layout == GemmLayout::kTN : op.dtype == DType::kFp8;
  s.trans_b = te && op.layout == GemmLayout::kNT;
  s.m = te ? op.n : op.m;
  s.n = te ? op.m : op.n;
  s.k = op.k;
  s.a = a;
  s.lda = s.trans_a ? s.k : s.m;  // op(A) is m x k: stored k x m when transposed
  s.stride_a = s.m * s.k;
  s.b = b;
  s.ldb = s.trans_b ? s.n : s.k;  // op(B) is k x n: stored n x k when transposed
  s.stride_b = s.k * s.n;
  s.d = d;
  s.ldd = s.m;
  s.stride_d = s.m * s.n;
  s.batch = op.batch;
  s.fast_accum = op.dtype == DType::kFp8 && op.fast_accum;
  s.scaling = op.dtype == DType::kFp8 ? op.scaling : GemmScaling::kTensor;
  return s;
}

Result<std::unique_ptr<LtMatmul>> LtMatmul::plan(cublasLtHandle_t handle, const MatmulShape& s,
                                                 cuda::ElemType t, void* workspace,
                                                 std::size_t workspace_bytes) {
  std::unique_ptr<LtMatmul> mm(new LtMatmul());
  mm->handle_ = handle;
  mm->shape_ = s;
  mm->workspace_ = workspace;
  mm->workspace_bytes_ = workspace_bytes;
  const cublasComputeType_t compute =
      t == cuda::ElemType::kFp32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  STEPSIM_CUBLAS_TRY(cublasLtMatmulDescCreate(&mm->desc_, compute, CUDA_R_32F));
  const cublasOperation_t ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  STEPSIM_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(mm->desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  STEPSIM_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(mm->desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const cudaDataType_t type = data_type(t);
  // FP8 products write bf16, as Transformer Engine's GEMMs do; cuBLASLt runs FP8 on Hopper
  // only with A transposed and B not (the "TN" layout), which the caller must have chosen;
  // MXFP8 (Blackwell) in any layout.
  const bool fp8 = t == cuda::ElemType::kFp8E4M3;
  const bool mx = fp8 && s.scaling == GemmScaling::kMx1x32;
  if (fp8 && !mx && (!s.trans_a || s.trans_b)) {
    return Error{"", "", "cuda backend: an FP8 product needs op(A) = A^T and op(B) = B (TN)",
                 ErrorKind::kRuntime};
  }
  if (fp8 && s.fast_accum) {
    // Transformer Engine's fprop under delayed and current scaling (use_split_accumulator
    // false): cuBLASLt's fast accumulation.
    const std::int8_t fast = 1;
    STEPSIM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(mm->desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                                      &fast, sizeof fast));
  }
  const cudaDataType_t d_type = fp8 ? CUDA_R_16BF : type;
  const bool block_scaled = fp8 && s.scaling != GemmScaling::kTensor;
  std::int64_t batch = s.batch;
  if (block_scaled) {
#if CUBLAS_VERSION >= 120900
    if (s.a_scale == nullptr || s.b_scale == nullptr) {
      return Error{"", "", "cuda backend: a block-scaled FP8 product needs its scales",
                   ErrorKind::kRuntime};
    }
    if (s.fast_accum) {
      return Error{"", "", "cuda backend: block-scaled FP8 products accumulate split, not fast",
                   ErrorKind::kRuntime};
    }
    // As Transformer Engine's cublas_gemm sets them (common/gemm/cublaslt_gemm.cu).
    const std::int32_t mode_a = mx ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0
                                : s.scaling == GemmScaling::kBlock128x128
                                    ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                    : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const std::int32_t mode_b =
        mx ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    STEPSIM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(
        mm->desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &s.a_scale, sizeof s.a_scale));
    STEPSIM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(
        mm->desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &s.b_scale, sizeof s.b_scale));
    STEPSIM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(mm->desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                                      &mode_a, sizeof mode_a));
    STEPSIM_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(mm->desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                                                      &mode_b, sizeof mode_b));
    mm->loops_ = s.batch;
    mm->a_step_ = s.stride_a;  // FP8 operands: one byte an element
    mm->b_step_ = s.stride_b;
    mm->d_step_ = s.stride_d * 2;  // a bf16 result
    batch = 1;
#else
    return Error{"", "", "cuda backend: block-scaled FP8 products need cuBLASLt 12.9 or newer",
                 ErrorKind::kRuntime};
#endif
  }
  STEPSIM_CUBLAS_TRY(make_layout(&mm->a_layout_, type, s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k,
                                 s.lda, batch, s.stride_a));
  STEPSIM_CUBLAS_TRY(make_layout(&mm->b_layout_, type, s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n,
                                 s.ldb, batch, s.stride_b));
  STEPSIM_CUBLAS_TRY(make_layout(&mm->d_layout_, d_type, s.m, s.n, s.ldd, batch, s.stride_d));
  STEPSIM_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&mm->pref_));
  const std::uint64_t ws = workspace_bytes;
  STEPSIM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
      mm->pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t best{};
  int returned = 0;
  STEPSIM_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(handle, mm->desc_, mm->a_layout_, mm->b_layout_,
                                                    mm->d_layout_, mm->d_layout_, mm->pref_, 1,
                                                    &best, &returned));
  if (returned == 0) {
    return Error{"", "",
                 "cuda backend: cuBLASLt has no algorithm for a " + std::to_string(s.m) + " x " +
                     std::to_string(s.n) + " x " + std::to_string(s.k) + " product",
                 ErrorKind::kRuntime};
  }
  mm->algo_ = best.algo;
  return mm;
}

LtMatmul::~LtMatmul() {
  if (pref_ != nullptr) cublasLtMatmulPreferenceDestroy(pref_);
  if (d_layout_ != nullptr) cublasLtMatrixLayoutDestroy(d_layout_);
  if (b_layout_ != nullptr) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_ != nullptr) cublasLtMatrixLayoutDestroy(a_layout_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

Status LtMatmul::run(cudaStream_t stream) const {
  const float alpha = 1.0F;
  const float beta = shape_.beta;
  for (std::int64_t i = 0; i < loops_; ++i) {
    const auto* a = static_cast<const char*>(shape_.a) + i * a_step_;
    const auto* b = static_cast<const char*>(shape_.b) + i * b_step_;
    auto* d = static_cast<char*>(shape_.d) + i * d_step_;
    STEPSIM_CUBLAS_TRY(cublasLtMatmul(handle_, desc_, &alpha, a, a_layout_, b, b_layout_, &beta, d,
                                      d_layout_, d, d_layout_, &algo_, workspace_, workspace_bytes_,
                                      stream));
  }
  return ok_status();
}

}  // namespace stepsim::calib
