#include <memory>

#include "cpu_backend.hpp"
#include "stepsim/calibration/backend.hpp"
#ifdef STEPSIM_HAVE_CUDA
#include "cuda_backend.hpp"
#endif

namespace stepsim::calib {

Result<std::unique_ptr<Backend>> make_backend(const std::string& name, const BackendOptions& o) {
  if (o.warmup < 0 || o.repeats < 1 || o.cpu_threads < 1) {
    return Error{"", "", "backend options: warmup >= 0, repeats >= 1 and threads >= 1 required"};
  }
  if (name == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(o));
  if (name == "cuda") {
#ifdef STEPSIM_HAVE_CUDA
    return make_cuda_backend(o);
#else
    return Error{"", "",
                 "cuda backend: not built (this stepsim was configured without the CUDA "
                 "toolkit, cuBLASLt and NCCL)"};
#endif
  }
  return Error{"", "--backend", "=" + name + " is not a backend; expected cuda or cpu"};
}

}  // namespace stepsim::calib
