#pragma once
// The MPI split/gather of `stepsim sweep`. CLI-side: MPI never reaches the sim library.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepsim/sweep/sweep.hpp"

namespace stepsim::cli {

/// This process's place in an mpirun launch.
struct MpiPlace {
  int rank = 0;
  int size = 1;
};

/// When launched by mpirun with more than one rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE),
/// initialises MPI and returns this rank's place; nullopt otherwise.
std::optional<MpiPlace> mpi_start_if_launched();

/// Concatenates every rank's `text` on rank 0 (in rank order); other ranks get "".
std::string mpi_gather_text(const std::string& text, const MpiPlace& place);

void mpi_stop();

}  // namespace stepsim::cli
