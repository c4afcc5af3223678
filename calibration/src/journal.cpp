#include "stepsim/calibration/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepsim/base/json_input.hpp"

namespace stepsim::calib {
namespace {

constexpr const char* kMagic = "stepsim_calibration_journal";

Error journal_error(const std::string& path, std::size_t line, const std::string& what) {
  return Error{path, "line " + std::to_string(line), ": " + what};
}

}  // namespace

std::string journal_header_line(const JournalHeader& h) {
  nlohmann::ordered_json j;
  j[kMagic] = 1;
  j["backend"] = h.backend;
  j["machine"] = h.machine;
  j["world_size"] = h.world_size;
  return j.dump() + "\n";
}

std::string journal_entry_line(const JournalEntry& e) {
  nlohmann::ordered_json j;
  j["key"] = e.key;
  j["seconds"] = e.seconds;
  return j.dump() + "\n";
}

Result<std::optional<JournalContents>> read_journal(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<JournalContents>{};
  auto read = read_input_file(path);
  if (!read) return read.errors();
  const std::string text = std::move(read).value();
  JournalContents out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const bool complete = end != std::string::npos;
    const std::string line = text.substr(pos, complete ? end - pos : std::string::npos);
    pos = complete ? end + 1 : text.size();
    ++line_no;
    if (!complete) {
      // Interrupted while writing the last line: that point is simply measured again.
      out.torn_tail = true;
      break;
    }
    auto parsed = parse_json_text(line, path);
    const nlohmann::json j = parsed ? std::move(parsed).value() : nlohmann::json();
    if (line_no == 1) {
      if (!j.is_object() || !j.contains(kMagic) || !j["backend"].is_string() ||
          !j["machine"].is_string() || !j["world_size"].is_number_integer()) {
        return journal_error(path, line_no,
                             "is not a stepsim calibration journal header (expected "
                             "stepsim_calibration_journal, backend, machine, world_size)");
      }
      out.header = {j["backend"].get<std::string>(), j["machine"].get<std::string>(),
                    j["world_size"].get<std::int64_t>()};
      continue;
    }
    if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("seconds") ||
        !j["seconds"].is_number() || j["seconds"].get<double>() < 0) {
      return journal_error(path, line_no,
                           "is not a journal entry (expected {\"key\": text, \"seconds\": "
                           "a number >= 0})");
    }
    out.entries.push_back({j["key"].get<std::string>(), j["seconds"].get<double>()});
  }
  if (line_no == 0 || (line_no == 1 && out.torn_tail)) {
    return std::optional<JournalContents>{};  // created but nothing written yet
  }
  return std::optional<JournalContents>{std::move(out)};
}

Result<JournalWriter> JournalWriter::open(const std::string& path, const JournalHeader& header) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error{path, "", std::string("cannot be opened for writing: ") + std::strerror(errno),
                 ErrorKind::kRuntime};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Error{path, "",
                 "is locked by another calibration that is still writing to it (an earlier "
                 "run, or the orphaned ranks of a killed mpirun): let it end or stop it, then "
                 "rerun to resume",
                 ErrorKind::kRuntime};
  }
  std::shared_ptr<const int> lock(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  std::error_code ec;
  const bool fresh =
      !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
  JournalWriter w(path);
  w.lock_ = std::move(lock);
  if (fresh) {
    w.out_.open(path, std::ios::binary | std::ios::trunc);
    if (!w.out_) return Error{path, "", "cannot be written", ErrorKind::kRuntime};
    w.out_ << journal_header_line(header);
    w.out_.flush();
  } else {
    // Drop a torn last line so that the next entry starts on a line of its own.
    auto read = read_input_file(path);
    if (!read) return read.errors();
    std::string text = std::move(read).value();
    const std::size_t last_newline = text.rfind('\n');
    if (last_newline + 1 != text.size()) {
      text.resize(last_newline == std::string::npos ? 0 : last_newline + 1);
      std::ofstream rewrite(path, std::ios::binary | std::ios::trunc);
      rewrite << text;
    }
    w.out_.open(path, std::ios::binary | std::ios::app);
    if (text.empty()) w.out_ << journal_header_line(header);
  }
  if (!w.out_) return Error{path, "", "cannot be written", ErrorKind::kRuntime};
  return w;
}

Status JournalWriter::append(const JournalEntry& e) {
  out_ << journal_entry_line(e);
  out_.flush();
  if (!out_) return Error{path_, "", "cannot be written (disk full?)", ErrorKind::kRuntime};
  return ok_status();
}

}  // namespace stepsim::calib
