// read_trace_file: maps the file into memory and hands it to parse_trace.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "stepsim/gui/trace_reader.hpp"

namespace stepsim::gui {

Result<TraceModel> read_trace_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{path, "", "is a directory, expected a trace file (Chrome trace event JSON)"};
  }
  // Map the file instead of copying it: a trace of millions of events is hundreds of MB.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path, "", std::string("cannot open: ") + std::strerror(errno)};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int err = errno;
    ::close(fd);
    return Error{path, "", std::string("cannot read: ") + std::strerror(err)};
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
  Result<TraceModel> result =
      parse_trace(std::string_view(static_cast<const char*>(data), size), path);
  ::munmap(data, size);
  return result;
}

}  // namespace stepsim::gui
