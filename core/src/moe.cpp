// Megatron's moe_layer_freq patterns (arguments.py moe_freq_type / _eval_pattern, which
// evaluates the Python list expression): parsed here by a small recursive-descent reader of
// the same grammar (lists of integers, '+' concatenation, '*' repetition on either side,
// parentheses).

#include "stepsim/core/moe.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

namespace stepsim {

namespace {

constexpr std::int64_t kMaxPatternLength = std::int64_t{1} << 20;

class PatternReader {
 public:
  explicit PatternReader(std::string_view text) : text_(text) {}

  std::optional<std::vector<std::int64_t>> parse() {
    auto v = sum();
    skip_space();
    if (!v || pos_ != text_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::int64_t> integer() {
    skip_space();
    const std::size_t start = pos_;
    std::int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_] - '0');
      if (v > kMaxPatternLength) return std::nullopt;
      ++pos_;
    }
    if (pos_ == start) return std::nullopt;
    return v;
  }
  // sum := product ('+' product)*
  std::optional<std::vector<std::int64_t>> sum() {
    auto out = product();
    while (out && take('+')) {
      auto next = product();
      if (!next) return std::nullopt;
      out->insert(out->end(), next->begin(), next->end());
      if (static_cast<std::int64_t>(out->size()) > kMaxPatternLength) return std::nullopt;
    }
    return out;
  }
  // product := (integer '*')* atom ('*' integer)*
  std::optional<std::vector<std::int64_t>> product() {
    std::int64_t times = 1;
    skip_space();
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      auto n = integer();
      if (!n || !take('*')) return std::nullopt;
      times *= *n;
      if (times > kMaxPatternLength) return std::nullopt;
      skip_space();
    }
    auto base = atom();
    while (base && take('*')) {
      auto n = integer();
      if (!n) return std::nullopt;
      times *= *n;
      if (times > kMaxPatternLength) return std::nullopt;
    }
    if (!base) return std::nullopt;
    if (static_cast<std::int64_t>(base->size()) * times > kMaxPatternLength) return std::nullopt;
    std::vector<std::int64_t> out;
    out.reserve(base->size() * static_cast<std::size_t>(times));
    for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), base->begin(), base->end());
    return out;
  }
  // atom := '[' integer (',' integer)* ']' | '(' sum ')'
  std::optional<std::vector<std::int64_t>> atom() {
    if (take('(')) {
      auto inner = sum();
      if (!inner || !take(')')) return std::nullopt;
      return inner;
    }
    if (!take('[')) return std::nullopt;
    std::vector<std::int64_t> out;
    if (take(']')) return out;
    do {
      auto n = integer();
      if (!n) return std::nullopt;
      out.push_back(*n);
    } while (take(','));
    if (!take(']')) return std::nullopt;
    return out;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<std::vector<bool>> parse_moe_layer_freq(std::string_view text, std::int64_t num_layers) {
  const std::string key = "model.moe_layer_freq";
  const std::string quoted = "=\"" + std::string(text) + "\"";
  std::vector<bool> out;
  if (num_layers > kMaxPatternLength) {
    return Error{"", key, quoted + ": num_layers=" + std::to_string(num_layers) +
                              " is beyond stepsim's limit of " +
                              std::to_string(kMaxPatternLength) + " layers"};
  }
  if (text.find('[') == std::string_view::npos) {
    std::int64_t n = 0;
    bool digits = !text.empty();
    for (const char c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || n > kMaxPatternLength) {
        digits = false;
        break;
      }
      n = n * 10 + (c - '0');
    }
    if (!digits || n <= 0) {
      return Error{"", key, quoted + " must be an integer > 0 or a list pattern such as "
                                     "\"([0]*3+[1]*58)\""};
    }
    out.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, num_layers)));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::int64_t>(i) % n == 0;
    return out;
  }
  const auto entries = PatternReader(text).parse();
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

}  // namespace stepsim
