// The MPI split of `stepsim sweep`: each rank evaluates every size-th configuration, rank 0
// gathers the rows as CSV text and writes the one result file.

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "sweep_output.hpp"

namespace stepsim::cli {

std::optional<MpiPlace> mpi_start_if_launched() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr) size = std::getenv("PMI_SIZE");
  if (size == nullptr || std::atoi(size) <= 1) return std::nullopt;
  MPI_Init(nullptr, nullptr);
  MpiPlace place;
  MPI_Comm_rank(MPI_COMM_WORLD, &place.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &place.size);
  return place;
}

std::string mpi_gather_text(const std::string& text, const MpiPlace& place) {
  const auto length = static_cast<long long>(text.size());
  std::vector<long long> lengths(static_cast<std::size_t>(place.size));
  MPI_Gather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  // Texts can pass 2 GiB in total: send them rank by rank in int-sized pieces.
  constexpr long long kPiece = 1 << 30;
  std::string all;
  if (place.rank != 0) {
    for (long long sent = 0; sent < length; sent += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, length - sent));
      MPI_Send(text.data() + sent, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
    return all;
  }
  all = text;
  for (int r = 1; r < place.size; ++r) {
    const long long total = lengths[static_cast<std::size_t>(r)];
    std::string part(static_cast<std::size_t>(total), '\0');
    for (long long got = 0; got < total; got += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, total - got));
      MPI_Recv(part.data() + got, n, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    all += part;
  }
  return all;
}

void mpi_stop() { MPI_Finalize(); }

}  // namespace stepsim::cli
