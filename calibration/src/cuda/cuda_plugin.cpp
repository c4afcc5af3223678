// Entry point of the CUDA backend plugin (see cuda_plugin.hpp).

#include "cuda/cuda_plugin.hpp"

#include "cuda/cuda_backend.hpp"

extern "C" __attribute__((visibility("default"))) void stepsim_make_cuda_backend(
    const stepsim::calib::BackendOptions& options,
    stepsim::Result<std::unique_ptr<stepsim::calib::Backend>>& out) {
  out = stepsim::calib::make_cuda_backend(options);
}
