#pragma once
// Internal: CUDA, cuBLASLt and NCCL status codes as Errors, and early-return macros for
// functions returning Result<T>.

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "stepsim/base/result.hpp"

namespace stepsim::calib {

inline Error cuda_error(cudaError_t e, const char* what) {
  return Error{"", "", std::string("cuda backend: ") + what + " failed: " + cudaGetErrorString(e),
               ErrorKind::kRuntime};
}
inline Error cublas_error(cublasStatus_t s, const char* what) {
  return Error{"", "",
               std::string("cuda backend: ") + what + " failed: cuBLASLt status " +
                   std::to_string(static_cast<int>(s)),
               ErrorKind::kRuntime};
}
inline Error nccl_error(ncclResult_t r, const char* what) {
  return Error{"", "", std::string("cuda backend: ") + what + " failed: " + ncclGetErrorString(r),
               ErrorKind::kRuntime};
}

}  // namespace stepsim::calib

#define STEPSIM_CUDA_TRY(expr)                                              \
  do {                                                                      \
    if (const cudaError_t stepsim_e_ = (expr); stepsim_e_ != cudaSuccess) { \
      return ::stepsim::calib::cuda_error(stepsim_e_, #expr);               \
    }                                                                       \
  } while (false)
#define STEPSIM_CUBLAS_TRY(expr)                                                         \
  do {                                                                                   \
    if (const cublasStatus_t stepsim_s_ = (expr); stepsim_s_ != CUBLAS_STATUS_SUCCESS) { \
      return ::stepsim::calib::cublas_error(stepsim_s_, #expr);                          \
    }                                                                                    \
  } while (false)
#define STEPSIM_NCCL_TRY(expr)                                               \
  do {                                                                       \
    if (const ncclResult_t stepsim_r_ = (expr); stepsim_r_ != ncclSuccess) { \
      return ::stepsim::calib::nccl_error(stepsim_r_, #expr);                \
    }                                                                        \
  } while (false)
