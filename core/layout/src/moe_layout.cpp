// Megatron's moe_layer_freq patterns (arguments.py moe_freq_type / _eval_pattern, which
// evaluates the Python list expression), read by layer_pattern.hpp's reader of the same grammar.

#include "stepsim/layout/moe_layout.hpp"

#include "stepsim/layout/hybrid_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "layer_pattern.hpp"

namespace stepsim {

Result<std::vector<bool>> parse_moe_layer_freq(std::string_view text, std::int64_t num_layers) {
  const std::string key = "model.moe_layer_freq";
  const std::string quoted = "=\"" + std::string(text) + "\"";
  std::vector<bool> out;
  if (num_layers > detail::kMaxPatternLength) {
    return Error{"", key, quoted + ": num_layers=" + std::to_string(num_layers) +
                              " is beyond stepsim's limit of " +
                              std::to_string(detail::kMaxPatternLength) + " layers"};
  }
  if (text.find('[') == std::string_view::npos) {
    const std::optional<std::int64_t> frequency = detail::pattern_frequency(text);
    if (!frequency) {
      return Error{"", key, quoted + " must be an integer > 0 or a list pattern such as "
                                     "\"([0]*3+[1]*58)\""};
    }
    out.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, num_layers)));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<std::int64_t>(i) % *frequency == 0;
    }
    return out;
  }
  const auto entries = detail::PatternReader(text).parse();
  if (!entries) {
    return Error{"", key, quoted + " is not a list pattern Megatron-LM evaluates (lists of 0/1 "
                                   "joined by + and repeated by *, e.g. \"([0]*3+[1]*58)\")"};
  }
  for (const std::int64_t v : *entries) {
    if (v != 0 && v != 1) {
      return Error{"", key, quoted + " has an entry " + std::to_string(v) +
                                "; each layer is 0 (dense) or 1 (MoE)"};
    }
    out.push_back(v == 1);
  }
  if (static_cast<std::int64_t>(out.size()) != num_layers) {
    return Error{"", key, quoted + " has " + std::to_string(out.size()) +
                              " entries; Megatron-LM needs one per layer (num_layers=" +
                              std::to_string(num_layers) + ")"};
  }
  return out;
}

std::vector<bool> moe_layer_pattern(const ModelConfig& m) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, m.num_layers));
  if (!m.moe()) return std::vector<bool>(n, false);
  if (m.hybrid()) {
    // A hybrid model's MoE layers are its E letters (HybridStack does not read moe_layer_freq).
    std::vector<bool> out;
    for (const HybridLayer k : hybrid_layer_kinds(m)) out.push_back(k == HybridLayer::kMoe);
    return out;
  }
  auto parsed = parse_moe_layer_freq(m.moe_layer_freq, m.num_layers);
  if (!parsed) return std::vector<bool>(n, false);
  return std::move(parsed).value();
}

std::vector<double> moe_expert_shares(const ModelConfig& m, const TrainingConfig& t) {
  if (!m.moe()) return {};
  const std::int64_t e = m.num_experts;
  if (!t.moe_load_shares.empty()) {
    double sum = 0;
    for (const double s : t.moe_load_shares) sum += s;
    std::vector<double> out;
    out.reserve(t.moe_load_shares.size());
    for (const double s : t.moe_load_shares) out.push_back(s / sum);
    return out;
  }
  const std::int64_t ep = t.expert_model_parallel_size > 0 ? t.expert_model_parallel_size : 1;
  if (t.moe_load_skew == 1 || ep == 1) return {};
  const std::int64_t local = e / ep;
  const double k = t.moe_load_skew;
  const double hot = k / static_cast<double>(e);
  const double cold = (1 - k / static_cast<double>(ep)) / static_cast<double>(e - local);
  std::vector<double> out(static_cast<std::size_t>(e), cold);
  std::fill_n(out.begin(), local, hot);
  return out;
}

std::vector<std::int64_t> moe_ep_rank_rows(std::int64_t routed, std::int64_t num_experts,
                                           std::int64_t ep, const std::vector<double>& shares,
                                           std::int64_t capacity, bool pad) {
  const std::int64_t local = num_experts / ep;
  std::vector<std::int64_t> out(static_cast<std::size_t>(ep), 0);
  for (std::int64_t r = 0; r < ep; ++r) {
    double rows = 0;  // from one source rank
    for (std::int64_t i = r * local; i < (r + 1) * local; ++i) {
      double v = shares.empty()
                     ? static_cast<double>(routed) / static_cast<double>(num_experts)
                     : static_cast<double>(routed) * shares[static_cast<std::size_t>(i)];
      if (capacity > 0) v = pad ? static_cast<double>(capacity)
                                : std::min(v, static_cast<double>(capacity));
      rows += v;
    }
    out[static_cast<std::size_t>(r)] = std::llround(rows * static_cast<double>(ep));
  }
  return out;
}

bool deepep_group_supported(std::int64_t group, std::int64_t etp, std::int64_t gpus_per_node) {
  if (group == 2 || group == 4 || group == 8) return gpus_per_node >= group;
  if (gpus_per_node != 8 || group % 8 != 0 || etp <= 0 || 8 % etp != 0) return false;
  for (const std::int64_t nodes : {2, 3, 4, 6, 8, 12, 16, 18, 20}) {
    if (group == 8 * nodes) return true;
  }
  return false;
}

}  // namespace stepsim
