// The sweep's CSV: one row per configuration, written in enumeration order, read back for
// --resume and for gathering ranks. Numbers are printed in their shortest round-trip form,
// so a row read back is equal to the row written and the summary built from it is the same.

#include <array>
#include <charconv>
#include <ostream>

#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {
namespace {

constexpr std::array<std::string_view, 22> kMetricColumns = {"status",
                                                             "reason_key",
                                                             "reason",
                                                             "simulated",
                                                             "step_time_s",
                                                             "tokens_per_s",
                                                             "mfu",
                                                             "hfu",
                                                             "tflops_per_gpu",
                                                             "bubble_fraction",
                                                             "peak_memory_bytes",
                                                             "memory_headroom",
                                                             "analytic_peak_bytes",
                                                             "cp_compute_s",
                                                             "cp_tp_comm_s",
                                                             "cp_p2p_s",
                                                             "cp_dp_comm_s",
                                                             "cp_optimizer_s",
                                                             "cp_bubble_s",
                                                             "usd_per_million_tokens",
                                                             "train_time_s",
                                                             "train_usd"};

std::string quote(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

// Splits one CSV record starting at `pos`; returns false if the text ends inside it.
bool split_record(std::string_view text, std::size_t& pos, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  bool quoted = false;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"' && pos < text.size() && text[pos] == '"') {
        field += '"';
        ++pos;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      fields.push_back(std::move(field));
      return true;
    } else {
      field += c;
    }
  }
  return false;
}

template <typename T>
bool parse_number(const std::string& s, T& out) {
  if (s.empty()) {
    out = T{};
    return true;
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Appends ",value". (Not `out += "," + value`: GCC 12 raises a false -Wrestrict on it.)
void field(std::string& out, std::string_view value) {
  out += ',';
  out += value;
}

}  // namespace

std::string csv_header(const std::vector<std::string>& columns) {
  std::string out = "index,scenario";
  for (const std::string& c : columns) field(out, quote(c));
  for (std::string_view c : kMetricColumns) field(out, std::string(c));
  return out;
}

std::string csv_line(const SweepRow& row, const SweepPricing* pricing) {
  std::string out = std::to_string(row.index);
  field(out, quote(row.label));
  for (const std::string& k : row.knobs) field(out, quote(k));
  field(out, std::string(to_string(row.status)));
  field(out, quote(row.reason_key));
  field(out, quote(row.reason));
  out += row.simulated ? ",true" : ",false";
  const SweepMetrics& m = row.metrics;
  if (row.simulated) {
    for (double v :
         {m.step_time_s, m.tokens_per_s, m.mfu, m.hfu, m.tflops_per_gpu, m.bubble_fraction}) {
      field(out, number(v));
    }
    field(out, std::to_string(m.peak_memory_bytes));
    field(out, number(m.memory_headroom));
  } else {
    out += ",,,,,,,,";
  }
  field(out, (m.analytic_peak_bytes > 0 ? std::to_string(m.analytic_peak_bytes) : ""));
  if (row.simulated) {
    for (double v : {m.cp_compute_s, m.cp_tp_comm_s, m.cp_p2p_s, m.cp_dp_comm_s, m.cp_optimizer_s,
                     m.cp_bubble_s}) {
      field(out, number(v));
    }
  } else {
    out += ",,,,,,";
  }
  // The cost columns: derived from the metrics and the sweep's price (not read back).
  const RowCost c = pricing != nullptr ? row_cost(row, *pricing) : RowCost{};
  field(out, c.priced ? number(c.usd_per_million_tokens) : "");
  field(out, c.trained ? number(c.train_time_s) : "");
  field(out, c.priced && c.trained ? number(c.train_usd) : "");
  return out;
}

CsvSink::CsvSink(std::ostream& out, const std::vector<std::string>& columns, bool write_header,
                 std::int64_t first_index, SweepPricing pricing)
    : out_(out), first_index_(first_index), pricing_(pricing) {
  if (write_header) out_ << csv_header(columns) << '\n';
}

void CsvSink::add(const SweepRow& row, const Workload& /*workload*/) {
  if (row.index < first_index_) return;
  out_ << csv_line(row, &pricing_) << '\n';
}

Result<ParsedCsv> parse_sweep_csv(std::string_view text, const std::vector<std::string>& columns,
                                  const std::string& file_label) {
  ParsedCsv out;
  const std::string header = csv_header(columns) + "\n";
  if (text.size() < header.size() || text.substr(0, header.size()) != header) {
    if (text.size() < header.size() && header.starts_with(text)) return out;  // torn header
    return Error{file_label, "", "does not start with this sweep's CSV header (another sweep?)"};
  }
  std::size_t pos = header.size();
  out.complete_bytes = pos;
  std::vector<std::string> f;
  const std::size_t knobs = columns.size();
  const std::size_t expected = 2 + knobs + kMetricColumns.size();
  while (pos < text.size()) {
    const std::size_t start = pos;
    if (!split_record(text, pos, f)) break;  // torn last line: evaluate it again
    const std::string where = "row at byte " + std::to_string(start);
    if (f.size() != expected) {
      return Error{file_label, "",
                   where + " has " + std::to_string(f.size()) + " fields, expected " +
                       std::to_string(expected)};
    }
    SweepRow row;
    bool ok = parse_number(f[0], row.index);
    row.label = f[1];
    row.knobs.assign(f.begin() + 2, f.begin() + static_cast<std::ptrdiff_t>(2 + knobs));
    std::size_t i = 2 + knobs;
    const std::string& status = f[i++];
    bool known_status = false;
    for (SweepStatus s : {SweepStatus::kFeasible, SweepStatus::kInvalid, SweepStatus::kOutOfMemory,
                          SweepStatus::kOverBudget, SweepStatus::kOverGpus}) {
      if (to_string(s) == status) {
        row.status = s;
        known_status = true;
      }
    }
    row.reason_key = f[i++];
    row.reason = f[i++];
    row.simulated = f[i++] == "true";
    SweepMetrics& m = row.metrics;
    for (double* d :
         {&m.step_time_s, &m.tokens_per_s, &m.mfu, &m.hfu, &m.tflops_per_gpu, &m.bubble_fraction}) {
      ok = parse_number(f[i++], *d) && ok;
    }
    ok = parse_number(f[i++], m.peak_memory_bytes) && ok;
    ok = parse_number(f[i++], m.memory_headroom) && ok;
    ok = parse_number(f[i++], m.analytic_peak_bytes) && ok;
    for (double* d : {&m.cp_compute_s, &m.cp_tp_comm_s, &m.cp_p2p_s, &m.cp_dp_comm_s,
                      &m.cp_optimizer_s, &m.cp_bubble_s}) {
      ok = parse_number(f[i++], *d) && ok;
    }
    double derived = 0;  // the cost columns: recomputed from the metrics and the price
    for (int k = 0; k < 3; ++k) ok = parse_number(f[i++], derived) && ok;
    if (!ok || !known_status) return Error{file_label, "", where + " has a malformed field"};
    out.rows.push_back(std::move(row));
    out.complete_bytes = pos;
  }
  return out;
}

}  // namespace stepsim::sim
