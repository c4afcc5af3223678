#pragma once
// The calibration journal: rank 0 appends one JSON line per measured point as soon as it is
// measured, so an interrupted calibration loses nothing. A rerun with the same journal skips
// every point already in it. The first line identifies the run that wrote it.
//
//   {"stepsim_calibration_journal":1,"backend":"cpu","machine":"...","world_size":2}
//   {"key":"gemm fp32 m=64 n=64 k=64 b=1","seconds":1.9e-05}

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim::calib {

struct JournalHeader {
  std::string backend;
  std::string machine;
  std::int64_t world_size = 1;
  bool operator==(const JournalHeader&) const = default;
};

struct JournalEntry {
  std::string key;       ///< point_key() of the measured point
  double seconds = 0.0;  ///< the measured median
  bool operator==(const JournalEntry&) const = default;
};

struct JournalContents {
  JournalHeader header;
  std::vector<JournalEntry> entries;
  bool torn_tail = false;  ///< the last line was cut short (interrupted write) and ignored
};

/// The header line, then one line per entry.
std::string journal_header_line(const JournalHeader& h);
std::string journal_entry_line(const JournalEntry& e);

/// Reads a journal; std::nullopt when `path` does not exist. Errors name the file and line.
Result<std::optional<JournalContents>> read_journal(const std::string& path);

/// Appends entries to a journal, flushing each line. Holds an exclusive lock (flock) on the
/// file while it lives: a second writer, such as a rerun started while the orphaned ranks of
/// a killed mpirun still append, is refused instead of interleaving with it.
class JournalWriter {
 public:
  /// Locks `path` (a runtime error naming it when another process holds the lock), then opens
  /// it for appending; writes the header first when the file is new or empty.
  static Result<JournalWriter> open(const std::string& path, const JournalHeader& header);
  Status append(const JournalEntry& e);

 private:
  explicit JournalWriter(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::shared_ptr<const int> lock_;  // the locked file descriptor; closing it unlocks
  std::ofstream out_;
};

}  // namespace stepsim::calib
