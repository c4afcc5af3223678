// read_trace_file: maps the file into memory and hands it to parse_trace.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "stepsim/base/json_input.hpp"
#include "stepsim/base/output_file.hpp"
#include "stepsim/gui/trace_reader.hpp"

namespace stepsim::gui {

namespace {
// A compressed trace is held decompressed in memory while it is parsed: refuse one that
// would not fit rather than exhausting the machine (a gzip "bomb" or a mistaken file).
constexpr std::size_t kMaxDecompressedBytes = std::size_t{8} << 30;
}  // namespace

Result<TraceModel> read_trace_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{path, "", "is a directory, expected a trace file (Chrome trace event JSON)"};
  }
  // Map the file instead of copying it: a trace of millions of events is hundreds of MB.
  // O_NONBLOCK: a FIFO without a writer must not block the open (input_file_problem says
  // what it is instead).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int err = errno;
    ::close(fd);
    return Error{path, "", std::string("cannot read: ") + std::strerror(err)};
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    const std::string why = input_file_problem(path);
    return Error{path, "", why.empty() ? "is not a regular file" : why};
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) {
    ::close(fd);
    return Error{path, "", "is empty, expected Chrome trace event JSON"};
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (data == MAP_FAILED)
    return Error{path, "", std::string("cannot read: ") + std::strerror(map_errno)};
  ::madvise(data, size, MADV_SEQUENTIAL);
  const std::string_view bytes(static_cast<const char*>(data), size);
  if (looks_gzipped(bytes)) {  // trace.json.gz (predict --trace FILE.json.gz)
    Result<std::string> text = gunzip(bytes, path, kMaxDecompressedBytes);
    ::munmap(data, size);
    if (!text) return text.errors();
    return parse_trace(*text, path);
  }
  Result<TraceModel> result = parse_trace(bytes, path);
  ::munmap(data, size);
  return result;
}

}  // namespace stepsim::gui
