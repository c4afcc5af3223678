#pragma once
// JSON outputs of `stepsim sweep` (the summary for --format json, every row for --out *.json)
// and the MPI split/gather. CLI-side: MPI never reaches the sim library.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepsim/sim/sweep.hpp"

namespace stepsim::cli {

/// Writes the --format json summary: evaluated, feasible, simulated, wall_s, jobs,
/// configurations_per_s, cut (by reason), best (scenario knobs + metrics + Megatron flags),
/// pareto.
void write_sweep_json(std::ostream& out, const sim::SweepSummary& summary, double wall_s, int jobs,
                      std::int64_t ranks);

/// Collects every row as a JSON object; write() emits them as one array in index order.
class JsonRowsSink final : public sim::SweepSink {
 public:
  explicit JsonRowsSink(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add(const sim::SweepRow& row, const Workload& workload) override;
  void write(std::ostream& out) const;

 private:
  std::vector<std::string> columns_;
  std::vector<sim::SweepRow> rows_;
};

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
