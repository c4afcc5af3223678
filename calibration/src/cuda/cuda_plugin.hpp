#pragma once
// The interface between make_backend() and the CUDA backend plugin module. Both sides are
// built by this project with the same compiler, so C++ types cross it safely; the entry
// point has C linkage only so that dlsym finds it by a plain name.

#include <memory>

#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

/// Fills `out` with a CudaBackend or the reason there is none.
using CudaPluginFactory = void (*)(const BackendOptions& options,
                                   Result<std::unique_ptr<Backend>>& out);

inline constexpr const char* kCudaPluginSymbol = "stepsim_make_cuda_backend";

}  // namespace stepsim::calib
