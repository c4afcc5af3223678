// The sweep's text report: what was swept, the rules configurations were cut by, the top
// configurations with every knob that varies as a column, the best per GPU count, the cost
// of each at the sweep's price, and a summary of the Pareto front.

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "stepsim/config/layout_words.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {
namespace {

using Cells = std::vector<std::string>;

std::string fmt(const char* format, double v) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), format, v);
  return buf.data();
}

std::string money(double usd) {
  if (usd >= 1e6) return fmt("$%.2fM", usd / 1e6);
  if (usd >= 1e4) return fmt("$%.1fk", usd / 1e3);
  return fmt("$%.2f", usd);
}

/// Right-aligned columns, two spaces apart, indented by two.
void write_table(std::ostream& out, const Cells& header, const std::vector<Cells>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const Cells& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  const auto line = [&](const Cells& cells) {
    std::string text = " ";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      text += std::string(width[c] - cells[c].size() + 1, ' ');
      text += cells[c];
    }
    out << text << '\n';
  };
  line(header);
  for (const Cells& r : rows) line(r);
}

/// Whether column `key` is one of the layout's sizes that follow the swept knobs (the virtual
/// stages, context and expert parallelism) rather than a setting derived for them.
bool layout_size(std::string_view key) {
  return key == "training.virtual_pipeline_model_parallel_size" ||
         key == "training.context_parallel_size" || key == "training.expert_model_parallel_size" ||
         key == "training.expert_tensor_parallel_size";
}

bool swept_key(const SweepSpec& spec, std::string_view key) {
  return std::any_of(spec.axes.begin(), spec.axes.end(), [&](const SweepAxis& a) {
    return knob_table()[static_cast<std::size_t>(a.knob)].key == key;
  });
}

/// The knob columns the tables show: the layout's sizes (gpus, t, p, dp, mbs, m), then every
/// swept knob and layout size whose value differs between feasible configurations, in
/// layout order, then in column order. (Settings derived for them, e.g. the layers per
/// virtual stage, are in the CSV and the JSON.)
std::vector<std::size_t> shown_columns(const SweepSummary& s) {
  const std::vector<std::string>& columns = s.columns();
  std::vector<std::size_t> varying;
  for (std::size_t i : s.varying_columns()) {
    if (swept_key(s.spec(), columns[i]) || layout_size(columns[i])) varying.push_back(i);
  }
  const auto varies = [&](std::size_t i) {
    return std::find(varying.begin(), varying.end(), i) != varying.end();
  };
  std::vector<std::size_t> out;
  for (const KeyShortName& k : key_short_names()) {
    const auto at = std::find(columns.begin(), columns.end(), k.key);
    if (at == columns.end()) continue;
    const auto i = static_cast<std::size_t>(at - columns.begin());
    const bool always = k.header == "gpus" || k.header == "t" || k.header == "p" ||
                        k.header == "dp" || k.header == "mbs" || k.header == "m";
    if (always || varies(i)) out.push_back(i);
  }
  for (std::size_t i : varying) {
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  return out;
}

Cells knob_headers(const SweepSummary& s, const std::vector<std::size_t>& shown) {
  Cells out;
  for (std::size_t i : shown) out.emplace_back(key_header(s.columns()[i]));
  return out;
}

/// A knob's cell: on/off for booleans; full recomputation with its method ("full/block").
void add_knob_cells(Cells& cells, const SweepRow& row, const std::vector<std::string>& columns,
                    const std::vector<std::size_t>& shown) {
  for (std::size_t i : shown) {
    const std::string& v = row.knobs[i];
    std::string cell = v == "true" ? "on" : v == "false" ? "off" : v;
    if (columns[i] == "training.recompute_granularity" && v == "full") {
      const auto method = std::find(columns.begin(), columns.end(), "training.recompute_method");
      if (method != columns.end()) {
        cell += "/" + row.knobs[static_cast<std::size_t>(method - columns.begin())];
      }
    }
    cells.push_back(std::move(cell));
  }
}

/// The cost columns' headers: $ per million tokens with a price, the training run's days
/// with train_tokens, its dollars with both.
Cells cost_headers(const SweepPricing& p) {
  Cells out;
  if (p.price_per_gpu_hour > 0) out.emplace_back("$/Mtok");
  if (p.train_tokens > 0) out.emplace_back("train_days");
  if (p.price_per_gpu_hour > 0 && p.train_tokens > 0) out.emplace_back("run_$");
  return out;
}

void add_cost_cells(Cells& cells, const SweepRow& row, const SweepPricing& p) {
  const RowCost c = row_cost(row, p);
  if (p.price_per_gpu_hour > 0) cells.push_back(fmt("%.4f", c.usd_per_million_tokens));
  if (p.train_tokens > 0) cells.push_back(fmt("%.1f", c.train_time_s / 86400.0));
  if (p.price_per_gpu_hour > 0 && p.train_tokens > 0) cells.push_back(money(c.train_usd));
}

/// A base without cost_model: the cost model it got, why, and how to ask for the other.
void write_default_cost_model(std::ostream& out, const SweepSpec& spec) {
  const CostModelSpec& cm = spec.base.cost_model;
  const std::string note = default_cost_model_note(cm, spec.base.system.gpu_name);
  if (note.empty()) return;
  out << "cost model: "
      << (cm.kind == CostModelSpec::Kind::kProfile
              ? "profile " + std::filesystem::path(cm.profile_path).filename().string()
              : "roofline " + spec.base.system.name)
      << " (" << note << ")\n";
}

void write_swept(std::ostream& out, const SweepSpec& spec) {
  out << "swept:";
  for (const SweepAxis& axis : spec.axes) {
    out << "\n  " << knob_table()[static_cast<std::size_t>(axis.knob)].key << ": ";
    if (axis.automatic) {
      out << "auto";
      continue;
    }
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      out << (i > 0 ? ", " : "") << format_knob_value(axis.knob, axis.values[i], spec.systems);
    }
  }
  out << "\n";
  if (spec.price_per_gpu_hour > 0) {
    out << "price: " << fmt("$%.4g", spec.price_per_gpu_hour) << " per GPU-hour\n";
  }
}

/// The rules configurations were cut by, most configurations first, each with the first
/// configuration it cut (its values, as the CSV's reason).
void write_cuts(std::ostream& out, const SweepSummary& s) {
  const std::vector<CutRule> rules = s.cut_rules();
  for (const bool after : {false, true}) {
    bool first = true;
    for (const CutRule& r : rules) {
      if (r.after_simulating != after) continue;
      if (first) {
        out << (after ? "infeasible after simulating" : "cut without simulating")
            << " (configurations: rule):\n";
      }
      first = false;
      out << fmt("  %8.0f  ", static_cast<double>(r.count)) << r.rule << '\n'
          << "            e.g. #" << r.example_index << ": " << r.example << '\n';
    }
  }
}

void write_top(std::ostream& out, const SweepSummary& s, const std::vector<std::size_t>& shown) {
  out << "top " << s.top().size() << " by " << to_string(s.spec().objective)
      << " (right of |: the critical path in s):\n";
  Cells header{"rank", "index"};
  const Cells knobs = knob_headers(s, shown);
  header.insert(header.end(), knobs.begin(), knobs.end());
  for (const char* h : {"step_s", "tokens/s", "MFU", "headroom"}) header.emplace_back(h);
  const Cells costs = cost_headers(s.pricing());
  header.insert(header.end(), costs.begin(), costs.end());
  for (const char* h : {"|", "compute", "tp_comm", "p2p", "dp_comm", "optimizer", "bubble"}) {
    header.emplace_back(h);
  }
  std::vector<Cells> rows;
  std::int64_t rank = 1;
  for (const RankedConfig& r : s.top()) {
    const SweepMetrics& m = r.row.metrics;
    Cells c{std::to_string(rank++), std::to_string(r.row.index)};
    add_knob_cells(c, r.row, s.columns(), shown);
    c.push_back(fmt("%.3f", m.step_time_s));
    c.push_back(fmt("%.1f", m.tokens_per_s));
    c.push_back(fmt("%.1f%%", 100.0 * m.mfu));
    c.push_back(fmt("%.1f%%", 100.0 * m.memory_headroom));
    add_cost_cells(c, r.row, s.pricing());
    c.emplace_back("|");
    for (double v : {m.cp_compute_s, m.cp_tp_comm_s, m.cp_p2p_s, m.cp_dp_comm_s, m.cp_optimizer_s,
                     m.cp_bubble_s}) {
      c.push_back(fmt("%.3f", v));
    }
    rows.push_back(std::move(c));
  }
  write_table(out, header, rows);
}

/// The best configuration of each GPU count, when the sweep has more than one.
void write_per_gpu_count(std::ostream& out, const SweepSummary& s,
                         const std::vector<std::size_t>& shown) {
  if (s.best_per_gpu_count().size() < 2) return;
  // Within one count, fewest GPUs ranks by throughput (SweepSummary::better's tie-break).
  const SweepObjective o = s.spec().objective;
  out << "best per GPU count (by "
      << to_string(o == SweepObjective::kMinGpus ? SweepObjective::kMaxTokensPerS : o) << "):\n";
  Cells header{"index"};
  const Cells knobs = knob_headers(s, shown);
  header.insert(header.end(), knobs.begin(), knobs.end());
  for (const char* h : {"step_s", "tokens/s", "tokens/s/gpu", "MFU"}) header.emplace_back(h);
  const Cells costs = cost_headers(s.pricing());
  header.insert(header.end(), costs.begin(), costs.end());
  std::vector<Cells> rows;
  for (const auto& [gpus, r] : s.best_per_gpu_count()) {
    const SweepMetrics& m = r.row.metrics;
    Cells c{std::to_string(r.row.index)};
    add_knob_cells(c, r.row, s.columns(), shown);
    c.push_back(fmt("%.3f", m.step_time_s));
    c.push_back(fmt("%.1f", m.tokens_per_s));
    c.push_back(fmt("%.1f", m.tokens_per_s / static_cast<double>(gpus)));
    c.push_back(fmt("%.1f%%", 100.0 * m.mfu));
    add_cost_cells(c, r.row, s.pricing());
    rows.push_back(std::move(c));
  }
  write_table(out, header, rows);
}

void write_best(std::ostream& out, const SweepSummary& s) {
  const SweepSpec& spec = s.spec();
  const RankedConfig& best = s.top().front();
  out << "best as Megatron-LM flags:\n  " << megatron_args_of(best.workload) << '\n';
  const RowCost cost = row_cost(best.row, s.pricing());
  if (spec.train_tokens > 0) {
    const TimeToTrain tt = time_to_train(best.workload, best.row.metrics.step_time_s,
                                         spec.train_tokens);
    out << "the best trains " << fmt("%.4g", static_cast<double>(tt.tokens)) << " tokens in "
        << tt.steps << " steps, " << fmt("%.1f days", tt.time_s / 86400.0) << ", "
        << fmt("%.0f GPU-hours", tt.gpu_hours)
        << (cost.priced ? ", " + money(tt.gpu_hours * spec.price_per_gpu_hour) : "") << '\n';
  }
  if (cost.priced) {
    out << "the best costs " << fmt("$%.4f", cost.usd_per_million_tokens)
        << " per million tokens\n";
  }
}

void write_pareto(std::ostream& out, const SweepSummary& s,
                  const std::vector<std::size_t>& shown) {
  const std::vector<const RankedConfig*> points = s.pareto_summary();
  out << "Pareto front (tokens/s vs peak memory): " << s.pareto().size() << " configurations";
  if (points.size() < s.pareto().size()) {
    out << ", " << points.size()
        << " evenly spaced along it shown (both ends); all of them: --format json "
           "(\"pareto\"), every configuration: --out FILE.csv";
  }
  out << ":\n";
  Cells header{"index"};
  const Cells knobs = knob_headers(s, shown);
  header.insert(header.end(), knobs.begin(), knobs.end());
  for (const char* h : {"tokens/s", "peak_GiB", "step_s"}) header.emplace_back(h);
  if (s.pricing().price_per_gpu_hour > 0) header.emplace_back("$/Mtok");
  std::vector<Cells> rows;
  for (const RankedConfig* r : points) {
    const SweepMetrics& m = r->row.metrics;
    Cells c{std::to_string(r->row.index)};
    add_knob_cells(c, r->row, s.columns(), shown);
    c.push_back(fmt("%.1f", m.tokens_per_s));
    c.push_back(fmt("%.2f", static_cast<double>(m.peak_memory_bytes) / (1024.0 * 1024.0 * 1024.0)));
    c.push_back(fmt("%.3f", m.step_time_s));
    if (s.pricing().price_per_gpu_hour > 0) {
      c.push_back(fmt("%.4f", row_cost(r->row, s.pricing()).usd_per_million_tokens));
    }
    rows.push_back(std::move(c));
  }
  write_table(out, header, rows);
}

}  // namespace

void write_sweep_text(std::ostream& out, const SweepSummary& s) {
  const SweepSpec& spec = s.spec();
  out << "sweep " << spec.file << ": " << s.evaluated() << " configurations, " << s.feasible()
      << " feasible, " << s.simulated() << " simulated (objective " << to_string(spec.objective)
      << ")\n";
  write_default_cost_model(out, spec);
  write_swept(out, spec);
  write_cuts(out, s);
  if (s.top().empty()) {
    out << "no feasible configuration\n";
    return;
  }
  const std::vector<std::size_t> shown = shown_columns(s);
  write_top(out, s, shown);
  write_best(out, s);
  write_per_gpu_count(out, s, shown);
  write_pareto(out, s, shown);
}

}  // namespace stepsim::sim
