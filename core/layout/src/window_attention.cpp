// Sliding-window attention's layer pattern and band (window_attention.hpp).

#include "stepsim/layout/window_attention.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "layer_pattern.hpp"

namespace stepsim {

Result<std::vector<bool>> parse_window_attn_skip_freq(std::string_view text,
                                                      std::int64_t num_layers) {
  const std::string key = "model.window_attn_skip_freq";
  const std::string quoted = "=\"" + std::string(text) + "\"";
  std::vector<bool> out;
  if (num_layers > detail::kMaxPatternLength) {
    return Error{"", key,
                 quoted + ": num_layers=" + std::to_string(num_layers) +
                     " is beyond stepsim's limit of " + std::to_string(detail::kMaxPatternLength) +
                     " layers"};
  }
  if (text.find('[') == std::string_view::npos) {
    const std::optional<std::int64_t> frequency = detail::pattern_frequency(text);
    if (!frequency) {
      return Error{"", key,
                   quoted +
                       " must be an integer > 0 or a list pattern such as "
                       "\"[1,1,1,0]*9\""};
    }
    // is_layer_window_attention: layer_number % window_attn_skip_freq != 0, 1-based.
    out.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, num_layers)));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<std::int64_t>(i + 1) % *frequency != 0;
    }
    return out;
  }
  const auto entries = detail::PatternReader(text).parse();
  if (!entries) {
    return Error{"", key,
                 quoted +
                     " is not a list pattern Megatron-LM evaluates (lists of 0/1 "
                     "joined by + and repeated by *, e.g. \"[1,1,1,0]*9\")"};
  }
  for (const std::int64_t v : *entries) {
    if (v != 0 && v != 1) {
      return Error{"", key,
                   quoted + " has an entry " + std::to_string(v) +
                       "; each layer is 1 (sliding window) or 0 (full attention)"};
    }
    out.push_back(v == 1);
  }
  if (static_cast<std::int64_t>(out.size()) != num_layers) {
    return Error{"", key,
                 quoted + " has " + std::to_string(out.size()) +
                     " entries; Megatron-LM needs one per layer (num_layers=" +
                     std::to_string(num_layers) + ")"};
  }
  return out;
}

std::int64_t window_keys(const ModelConfig& m) {
  if (m.window_size.size() != 2 || m.window_size[0] < 0) return 0;
  const std::int64_t keys = m.window_size[0] + 1;
  return keys >= m.seq_length ? 0 : keys;
}

std::vector<bool> window_layer_pattern(const ModelConfig& m) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, m.num_layers));
  if (window_keys(m) == 0) return std::vector<bool>(n, false);
  if (m.window_attn_skip_freq.empty()) return std::vector<bool>(n, true);
  auto parsed = parse_window_attn_skip_freq(m.window_attn_skip_freq, m.num_layers);
  if (!parsed) return std::vector<bool>(n, false);
  return std::move(parsed).value();
}

double causal_band_scores(std::int64_t seq, std::int64_t window) {
  const auto s = static_cast<double>(seq);
  if (window <= 0 || window >= seq) return s * (s + 1) / 2;
  const auto w = static_cast<double>(window);
  return w * s - w * (w - 1) / 2;
}

}  // namespace stepsim
