#include "stepsim/gui/sweep_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "stepsim/base/json_input.hpp"

namespace stepsim::gui {

namespace {

// Splits CSV text into records of cells; returns false on an unterminated quote.
bool split_csv(std::string_view text, std::vector<std::vector<std::string>>& records,
               std::vector<std::size_t>& lines) {
  std::vector<std::string> record;
  std::string cell;
  bool quoted = false;
  bool any = false;
  std::size_t line = 1;
  std::size_t record_line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      record.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cell.empty()) {
        record.push_back(std::move(cell));
        records.push_back(std::move(record));
        lines.push_back(record_line);
      }
      record.clear();
      cell.clear();
      any = false;
      record_line = ++line;
    } else {
      cell += c;
      any = true;
    }
  }
  if (quoted) return false;
  if (any || !cell.empty()) {
    record.push_back(std::move(cell));
    records.push_back(std::move(record));
    lines.push_back(record_line);
  }
  return true;
}

bool parse_double(const std::string& s, double& out) {
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  while (begin < end && *begin == ' ') ++begin;
  while (end > begin && end[-1] == ' ') --end;
  if (begin == end) return false;
  const auto r = std::from_chars(begin, end, out);
  // Throughput and memory are measures: "nan", "inf" and negative numbers are no value.
  return r.ec == std::errc() && r.ptr == end && std::isfinite(out) && out >= 0;
}

// Problems listed per file; a CSV of a million bad rows is reported by its first ones.
constexpr std::size_t kMaxErrors = 20;

std::int64_t column_of(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : it - header.begin();
}

}  // namespace

Result<SweepTable> parse_sweep_csv(std::string_view text, const std::string& file,
                                   const SweepColumns& columns) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return Error{file, "", "byte " + std::to_string(nul + 1) + " is a NUL byte (a CSV holds text)"};
  }
  std::vector<std::vector<std::string>> records;
  std::vector<std::size_t> lines;
  if (!split_csv(text, records, lines)) return Error{file, "", "unterminated quoted cell"};
  if (records.empty()) return Error{file, "", "is empty, expected a header row of column names"};
  SweepTable table;
  table.path = file;
  table.header = records[0];
  // A column named twice leaves which cells are its values to chance (a viewer that takes the
  // first plots what another reader would not): refuse it, naming the column.
  Errors duplicates;
  const auto begin = table.header.begin();
  for (std::size_t c = 0; c < table.header.size(); ++c) {
    const auto at = begin + static_cast<std::ptrdiff_t>(c);
    if (std::count(begin, at, table.header[c]) != 1) continue;  // reported at its 2nd only
    const auto first = static_cast<std::size_t>(std::find(begin, at, table.header[c]) - begin);
    duplicates.push_back(Error{file, table.header[c],
                               ": column is given twice in the header (columns " +
                                   std::to_string(first + 1) + " and " + std::to_string(c + 1) +
                                   "): which one holds its values is ambiguous"});
  }
  if (!duplicates.empty()) return duplicates;
  const std::int64_t name = column_of(table.header, columns.name);
  const std::int64_t tput = column_of(table.header, columns.throughput);
  const std::int64_t mem = column_of(table.header, columns.memory);
  const std::int64_t trace = column_of(table.header, columns.trace);
  const std::int64_t status = column_of(table.header, columns.status);
  const std::int64_t index = column_of(table.header, columns.index);
  const std::int64_t step_time = column_of(table.header, columns.step_time);
  Errors errors;
  if (tput < 0)
    errors.push_back(
        Error{file, columns.throughput, ": required column is missing from the header"});
  if (mem < 0)
    errors.push_back(Error{file, columns.memory, ": required column is missing from the header"});
  if (!errors.empty()) return errors;
  table.has_trace_column = trace >= 0;
  const std::filesystem::path folder = std::filesystem::path(file).parent_path();
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (errors.size() >= kMaxErrors) {
      errors.push_back(Error{file, "", "further problems not listed"});
      break;
    }
    const auto& row = records[r];
    const std::string where = " on line " + std::to_string(lines[r]);
    if (row.size() != table.header.size()) {
      errors.push_back(Error{file, "",
                             "line " + std::to_string(lines[r]) + " has " +
                                 std::to_string(row.size()) + " cells, the header has " +
                                 std::to_string(table.header.size())});
      continue;
    }
    const std::string& tput_cell = row[static_cast<std::size_t>(tput)];
    const std::string& mem_cell = row[static_cast<std::size_t>(mem)];
    if (tput_cell.empty() || mem_cell.empty()) {
      ++table.skipped_rows;
      continue;
    }
    SweepPoint p;
    p.line = lines[r];
    bool ok = true;
    if (!parse_double(tput_cell, p.tokens_per_s)) {
      errors.push_back(
          Error{file, columns.throughput, where + " must be a finite number >= 0, got '" + tput_cell + "'"});
      ok = false;
    }
    if (!parse_double(mem_cell, p.peak_memory_bytes)) {
      errors.push_back(
          Error{file, columns.memory, where + " must be a finite number >= 0, got '" + mem_cell + "'"});
      ok = false;
    }
    if (!ok) continue;
    if (name >= 0) {
      p.label = row[static_cast<std::size_t>(name)];
    } else {
      for (std::size_t c = 0; c < row.size(); ++c) {
        const auto col = static_cast<std::int64_t>(c);
        if (col == tput || col == mem || col == trace || col == status) continue;
        if (!p.label.empty()) p.label += ' ';
        p.label += table.header[c] + "=" + row[c];
      }
    }
    double number = 0;
    if (index >= 0 && parse_double(row[static_cast<std::size_t>(index)], number) && number >= 0 &&
        number < 9e15) {
      p.index = static_cast<std::int64_t>(number);
    }
    if (step_time >= 0 && parse_double(row[static_cast<std::size_t>(step_time)], number)) {
      p.step_time_s = number;
    }
    if (status >= 0) {
      p.status = row[static_cast<std::size_t>(status)];
      p.feasible = p.status == columns.feasible;
    }
    if (trace >= 0 && !row[static_cast<std::size_t>(trace)].empty()) {
      std::filesystem::path tp(row[static_cast<std::size_t>(trace)]);
      p.trace_path = (tp.is_relative() ? folder / tp : tp).lexically_normal().string();
    }
    table.points.push_back(std::move(p));
  }
  if (!errors.empty()) return errors;
  return table;
}

Result<SweepTable> read_sweep_csv(const std::string& path, const SweepColumns& columns) {
  // A sweep of a million configurations writes ~200 MB; 1 GiB is no sweep output.
  auto text = read_input_file(path, std::size_t{1} << 30);
  if (!text) return text.errors();
  return parse_sweep_csv(*text, path, columns);
}

std::vector<std::size_t> pareto_front(const std::vector<SweepPoint>& points) {
  std::vector<std::size_t> order(points.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (points[a].peak_memory_bytes != points[b].peak_memory_bytes) {
      return points[a].peak_memory_bytes < points[b].peak_memory_bytes;
    }
    return points[a].tokens_per_s > points[b].tokens_per_s;
  });
  std::vector<std::size_t> front;
  double best = -1;
  for (std::size_t i : order) {
    if (points[i].feasible && points[i].tokens_per_s > best) {
      front.push_back(i);
      best = points[i].tokens_per_s;
    }
  }
  return front;
}

}  // namespace stepsim::gui
