#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include <memory>

#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_plugin.hpp"
#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

namespace {

#ifdef STEPSIM_HAVE_CUDA
// The CUDA backend lives in a plugin so that commands which never touch a GPU do not load
// the CUDA libraries. The handle stays open for the process's lifetime: backends made by it
// must outlive no code of it.
// The folder of the running executable: an installed or copied stepsim finds the plugin
// beside itself; the build folder compiled in is the fallback.
std::string default_plugin_dir() {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n > 0) {
    const std::filesystem::path exe(std::string(buf.data(), static_cast<std::size_t>(n)));
    std::error_code ec;
    if (std::filesystem::exists(exe.parent_path() / STEPSIM_CUDA_PLUGIN, ec)) {
      return exe.parent_path().string();
    }
  }
  return STEPSIM_PLUGIN_DIR;
}

Result<std::unique_ptr<Backend>> load_cuda_backend(const BackendOptions& o) {
  const std::string dir = o.plugin_dir.empty() ? default_plugin_dir() : o.plugin_dir;
  const std::string path = dir + "/" + STEPSIM_CUDA_PLUGIN;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{"", "",
                 "cuda backend: cannot load its plugin " + path + ": " +
                     (why != nullptr ? why : "unknown error"),
                 ErrorKind::kRuntime};
  }
  auto* make = reinterpret_cast<CudaPluginFactory>(dlsym(handle, kCudaPluginSymbol));
  if (make == nullptr) {
    return Error{"", "", "cuda backend: plugin " + path + " has no " + kCudaPluginSymbol,
                 ErrorKind::kRuntime};
  }
  Result<std::unique_ptr<Backend>> backend =
      Error{"", "", "cuda backend: plugin made nothing", ErrorKind::kRuntime};
  make(o, backend);
  return backend;
}
#endif

}  // namespace

Result<std::unique_ptr<Backend>> make_backend(const std::string& name, const BackendOptions& o) {
  if (o.warmup < 0 || o.repeats < 1 || o.cpu_threads < 1) {
    return Error{"", "", "backend options: warmup >= 0, repeats >= 1 and threads >= 1 required"};
  }
  if (name == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(o));
  if (name == "cuda") {
#ifdef STEPSIM_HAVE_CUDA
    return load_cuda_backend(o);
#else
    return Error{"", "",
                 "cuda backend: not built (this stepsim was configured without the CUDA "
                 "toolkit, cuBLASLt and NCCL)",
                 ErrorKind::kRuntime};
#endif
  }
  return Error{"", "--backend", "=" + name + " is not a backend; expected cuda or cpu"};
}

}  // namespace stepsim::calib
