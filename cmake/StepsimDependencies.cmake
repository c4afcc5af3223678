# Finds every dependency once, from Debian's packages (see cmake/bootstrap.sh), and records
# which optional parts can be built. Nothing here downloads anything.
find_package(Boost 1.74 REQUIRED)                 # Boost.Graph is header-only for our use
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)

# Python: Debian's interpreter (/usr/bin/python3, where bootstrap.sh installs pytest, pandas
# and matplotlib) unless -DPython3_EXECUTABLE names another; an interpreter found first on
# PATH (pyenv, a virtualenv) often lacks those modules. The interpreter runs the Python
# tests; its headers, when present, build the `stepsim` module (python/).
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python interpreter for the module and its tests")
endif()
find_package(Python3 COMPONENTS Interpreter)
set(STEPSIM_HAVE_PYTHON_MODULE OFF)
if(STEPSIM_BUILD_PYTHON)
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.6 CONFIG QUIET)
  if(Python3_Development.Module_FOUND AND pybind11_FOUND)
    set(STEPSIM_HAVE_PYTHON_MODULE ON)
  else()
    message(STATUS "stepsim: Python headers (python3-dev) or pybind11 (pybind11-dev) not found, "
      "the stepsim Python module is not built")
  endif()
endif()

set(STEPSIM_HAVE_QT OFF)
if(STEPSIM_BUILD_GUI)
  find_package(Qt6 6.4 COMPONENTS Widgets Charts QUIET)
  if(Qt6_FOUND)
    set(STEPSIM_HAVE_QT ON)
  else()
    message(STATUS "stepsim: Qt6 Widgets/Charts not found, stepsim-viewer is not built")
  endif()
endif()

if(STEPSIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(STEPSIM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA: the toolkit (nvcc, cuBLASLt, NCCL) is installed on the build machines, which have no
# GPU. The backend compiles and links whenever the toolkit is present; tests skip at run time.
set(STEPSIM_HAVE_CUDA OFF)
if(STEPSIM_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_library(STEPSIM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(STEPSIM_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(STEPSIM_NCCL_LIBRARY AND STEPSIM_NCCL_INCLUDE_DIR AND TARGET CUDA::cublasLt)
      set(STEPSIM_HAVE_CUDA ON)
      add_library(stepsim_nccl UNKNOWN IMPORTED)
      set_target_properties(stepsim_nccl PROPERTIES IMPORTED_LOCATION ${STEPSIM_NCCL_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${STEPSIM_NCCL_INCLUDE_DIR})
    else()
      message(STATUS "stepsim: CUDA found but cuBLASLt or NCCL missing, CUDA backend off")
    endif()
  else()
    message(STATUS "stepsim: CUDA toolkit not found, CUDA backend off")
  endif()
endif()
message(STATUS "stepsim: CUDA backend ${STEPSIM_HAVE_CUDA}, viewer ${STEPSIM_HAVE_QT}, "
  "Python module ${STEPSIM_HAVE_PYTHON_MODULE} (${Python3_EXECUTABLE})")
