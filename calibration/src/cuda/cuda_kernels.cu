// Kernels of the CUDA backend: operand and pattern fills, result checks, the memory-bound
// copy, and the softmax of the unfused attention path.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda/cuda_kernels.hpp"

namespace stepsim::calib::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ float to_float(__half v) { return __half2float(v); }
__device__ float to_float(float v) { return v; }
template <typename T>
__device__ T from_float(float v);
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

// Operand values uniform in [-0.5, 0.5), every element its own (SplitMix64's finaliser of its
// index and the seed), as a training step's activations and weights have no period. A GEMM's
// power, and so its clock under the 700 W cap, depends on how its operands' bits change: the
// earlier fill, (i * 2654435761 + c) mod 1024, repeated every 1,024 elements, so every row of
// a k = 4096 operand was the same, and the largest products measured cooler than they run.
__device__ float operand_value(std::int64_t i, std::uint32_t seed) {
  std::uint64_t z = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull +
                    (static_cast<std::uint64_t>(seed) << 32);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) - 0.5f;  // 24 bits
}

template <typename T>
__global__ void fill_operand_kernel(T* buf, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    buf[i] = from_float<T>(operand_value(i, seed));
  }
}

__device__ float pattern_value(std::int64_t r, std::int64_t i) {
  return static_cast<float>((r + 1) * ((i % 13) + 1));
}

__global__ void fill_collective_kernel(float* buf, std::int64_t n, std::int64_t rank) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    buf[i] = pattern_value(rank, i);
  }
}

__global__ void check_collective_kernel(const float* out, std::int64_t count, int kind,
                                        std::int64_t g, std::int64_t n, std::int64_t per,
                                        unsigned long long* wrong) {
  const std::int64_t ranks_sum = n * (n + 1) / 2;
  unsigned long long local = 0;
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < count;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float want = 0.0f;
    if (kind == 0) want = static_cast<float>(ranks_sum * ((j % 13) + 1));
    if (kind == 1) want = pattern_value(j / per, j % per);
    if (kind == 2) want = static_cast<float>(ranks_sum * (((g * per + j) % 13) + 1));
    if (kind == 3) want = pattern_value(j / per, g * per + j % per);  // all-to-all
    if (out[j] != want) ++local;
  }
  if (local != 0) atomicAdd(wrong, local);
}

__device__ std::uint8_t message_byte(std::int32_t sender, std::int32_t tag, std::int64_t i) {
  return static_cast<std::uint8_t>((sender * 31 + tag * 7 + i) % 251);
}

__global__ void fill_message_kernel(std::uint8_t* buf, std::int64_t n, std::int32_t sender,
                                    std::int32_t tag) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    buf[i] = message_byte(sender, tag, i);
  }
}

__global__ void check_message_kernel(const std::uint8_t* buf, std::int64_t n, std::int32_t sender,
                                     std::int32_t tag, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (buf[i] != message_byte(sender, tag, i)) ++local;
  }
  if (local != 0) atomicAdd(wrong, local);
}

__global__ void scale_copy_kernel(const float4* src, float4* dst, std::int64_t n4) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float4 v = src[i];
    v.x *= 2.0f;
    v.y *= 2.0f;
    v.z *= 2.0f;
    v.w *= 2.0f;
    dst[i] = v;
  }
}

__global__ void scale_copy_tail_kernel(const float* src, float* dst, std::int64_t first,
                                       std::int64_t n) {
  const std::int64_t i = first + blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = 2.0f * src[i];
}

/// One block per row: max, sum of exponentials, normalise; fp32 arithmetic.
template <typename T>
__global__ void softmax_kernel(T* scores, std::int64_t cols, float scale, bool causal) {
  __shared__ float reduce[kThreads];
  const std::int64_t row = blockIdx.x;
  T* s = scores + row * cols;
  const std::int64_t last = causal ? (row % cols) + 1 : cols;
  float mx = -INFINITY;
  for (std::int64_t c = threadIdx.x; c < last; c += blockDim.x)
    mx = fmaxf(mx, to_float(s[c]) * scale);
  reduce[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) reduce[threadIdx.x] = fmaxf(reduce[threadIdx.x], reduce[threadIdx.x + w]);
    __syncthreads();
  }
  mx = reduce[0];
  __syncthreads();
  float sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < last; c += blockDim.x)
    sum += __expf(to_float(s[c]) * scale - mx);
  reduce[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) reduce[threadIdx.x] += reduce[threadIdx.x + w];
    __syncthreads();
  }
  const float inv = 1.0f / reduce[0];
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    s[c] = from_float<T>(c < last ? __expf(to_float(s[c]) * scale - mx) * inv : 0.0f);
  }
}

template <typename T>
__global__ void softmax_backward_kernel(const T* probs, T* grad, std::int64_t cols) {
  __shared__ float reduce[kThreads];
  const std::int64_t row = blockIdx.x;
  const T* p = probs + row * cols;
  T* g = grad + row * cols;
  float dot = 0.0f;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dot += to_float(p[c]) * to_float(g[c]);
  reduce[threadIdx.x] = dot;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) reduce[threadIdx.x] += reduce[threadIdx.x + w];
    __syncthreads();
  }
  dot = reduce[0];
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    g[c] = from_float<T>(to_float(p[c]) * (to_float(g[c]) - dot));
  }
}

}  // namespace

cudaError_t fill_operand(void* buf, std::int64_t n, ElemType t, std::uint32_t seed,
                         cudaStream_t stream) {
  switch (t) {
    case ElemType::kBf16:
      fill_operand_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(buf),
                                                                  n, seed);
      break;
    case ElemType::kFp16:
      fill_operand_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__half*>(buf), n,
                                                                  seed);
      break;
    case ElemType::kFp32:
      fill_operand_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(buf), n,
                                                                  seed);
      break;
    case ElemType::kFp8E4M3:
      fill_operand_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(buf),
                                                                  n, seed);
      break;
  }
  return cudaGetLastError();
}

cudaError_t fill_collective_input(float* buf, std::int64_t n, std::int64_t rank,
                                  cudaStream_t stream) {
  fill_collective_kernel<<<blocks_for(n), kThreads, 0, stream>>>(buf, n, rank);
  return cudaGetLastError();
}

cudaError_t count_collective_errors(const float* out, std::int64_t count, int kind,
                                    std::int64_t group_rank, std::int64_t group_size,
                                    std::int64_t per_rank, unsigned long long* wrong,
                                    cudaStream_t stream) {
  check_collective_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, count, kind, group_rank,
                                                                      group_size, per_rank, wrong);
  return cudaGetLastError();
}

cudaError_t fill_message(std::uint8_t* buf, std::int64_t n, std::int32_t sender, std::int32_t tag,
                         cudaStream_t stream) {
  fill_message_kernel<<<blocks_for(n), kThreads, 0, stream>>>(buf, n, sender, tag);
  return cudaGetLastError();
}

cudaError_t count_message_errors(const std::uint8_t* buf, std::int64_t n, std::int32_t sender,
                                 std::int32_t tag, unsigned long long* wrong, cudaStream_t stream) {
  check_message_kernel<<<blocks_for(n), kThreads, 0, stream>>>(buf, n, sender, tag, wrong);
  return cudaGetLastError();
}

cudaError_t scale_copy(const float* src, float* dst, std::int64_t n, cudaStream_t stream) {
  // cudaMalloc'd buffers are 256-byte aligned, so the float4 body is aligned.
  const std::int64_t n4 = n / 4;
  if (n4 > 0) {
    scale_copy_kernel<<<blocks_for(n4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(src),
                                                               reinterpret_cast<float4*>(dst), n4);
  }
  if (n4 * 4 < n) scale_copy_tail_kernel<<<1, kThreads, 0, stream>>>(src, dst, n4 * 4, n);
  return cudaGetLastError();
}

cudaError_t softmax_rows(void* scores, std::int64_t rows, std::int64_t cols, float scale,
                         bool causal, ElemType t, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(rows);
  switch (t) {
    case ElemType::kBf16:
      softmax_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(scores), cols,
                                                    scale, causal);
      break;
    case ElemType::kFp16:
      softmax_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(scores), cols, scale,
                                                    causal);
      break;
    case ElemType::kFp32:
      softmax_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(scores), cols, scale,
                                                    causal);
      break;
    case ElemType::kFp8E4M3:
      return cudaErrorInvalidValue;  // attention scores are never FP8
  }
  return cudaGetLastError();
}

cudaError_t softmax_backward_rows(const void* probs, void* grad, std::int64_t rows,
                                  std::int64_t cols, ElemType t, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(rows);
  switch (t) {
    case ElemType::kBf16:
      softmax_backward_kernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(probs), static_cast<__nv_bfloat16*>(grad), cols);
      break;
    case ElemType::kFp16:
      softmax_backward_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(probs),
                                                             static_cast<__half*>(grad), cols);
      break;
    case ElemType::kFp32:
      softmax_backward_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(probs),
                                                             static_cast<float*>(grad), cols);
      break;
    case ElemType::kFp8E4M3:
      return cudaErrorInvalidValue;  // attention scores are never FP8
  }
  return cudaGetLastError();
}

}  // namespace stepsim::calib::cuda
