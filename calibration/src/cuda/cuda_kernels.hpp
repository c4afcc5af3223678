#pragma once
// Internal: the few CUDA kernels the CUDA backend needs beside cuBLASLt and NCCL, callable
// from host C++. Every launcher enqueues on `stream` and returns the launch status.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace stepsim::calib::cuda {

/// kFp8E4M3: FP8 GEMM operands (fill_operand only; attention kernels take 16/32-bit types).
enum class ElemType : std::uint8_t { kBf16, kFp16, kFp32, kFp8E4M3 };

/// buf[i] = small deterministic values in [-0.5, 0.5] (GEMM and attention operands).
cudaError_t fill_operand(void* buf, std::int64_t n, ElemType t, std::uint32_t seed,
                         cudaStream_t stream);

/// buf[i] = pattern_value(rank, i) (bench_math.hpp), fp32.
cudaError_t fill_collective_input(float* buf, std::int64_t n, std::int64_t rank,
                                  cudaStream_t stream);

/// Adds to *wrong the elements of `out` that differ from expected_value(kind, g, n, per, j);
/// kind: 0 all-reduce, 1 all-gather, 2 reduce-scatter.
cudaError_t count_collective_errors(const float* out, std::int64_t count, int kind,
                                    std::int64_t group_rank, std::int64_t group_size,
                                    std::int64_t per_rank, unsigned long long* wrong,
                                    cudaStream_t stream);

/// buf[i] = p2p_pattern(sender, tag, i).
cudaError_t fill_message(std::uint8_t* buf, std::int64_t n, std::int32_t sender, std::int32_t tag,
                         cudaStream_t stream);

/// Adds to *wrong the bytes of `buf` that differ from p2p_pattern(sender, tag, i).
cudaError_t count_message_errors(const std::uint8_t* buf, std::int64_t n, std::int32_t sender,
                                 std::int32_t tag, unsigned long long* wrong, cudaStream_t stream);

/// The memory-bound kernel: dst[i] = 2 * src[i] over n floats (reads and writes 4n bytes each).
cudaError_t scale_copy(const float* src, float* dst, std::int64_t n, cudaStream_t stream);

/// In place, row-wise softmax of `rows` rows of `cols` scores (bf16 or fp16), scaled by
/// `scale` first; with `causal`, row r keeps columns 0..(r % cols) and zeroes the rest.
cudaError_t softmax_rows(void* scores, std::int64_t rows, std::int64_t cols, float scale,
                         bool causal, ElemType t, cudaStream_t stream);

/// Softmax backward in place on dP: dS = P * (dP - rowsum(P * dP)).
cudaError_t softmax_backward_rows(const void* probs, void* grad, std::int64_t rows,
                                  std::int64_t cols, ElemType t, cudaStream_t stream);

}  // namespace stepsim::calib::cuda
