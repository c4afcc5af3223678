#include "stepsim/layout/hybrid_layout.hpp"

#include <string>

namespace stepsim {

namespace {

constexpr std::string_view kKey = "model.hybrid_layer_pattern";

std::string not_modelled(char c) {
  switch (c) {
    case 'G': return "G (a gated delta net layer) is not modelled yet";
    case 'D': return "D (a DeepSeek sparse attention layer) is not modelled yet";
    case '+': return "+ (a multi-latent attention layer) is not modelled yet";
    case '/': return "'/' (multi-token prediction layers) is not modelled yet";
    default: break;
  }
  return "'" + std::string(1, c) +
         "' is not a layer letter of Megatron-Core's hybrid_layer_allocation.Symbols (M, G, *, D, "
         "+, -, E, and '|' between pipeline segments)";
}

}  // namespace

Result<HybridPattern> parse_hybrid_layer_pattern(std::string_view text) {
  HybridPattern out;
  out.segments.push_back(0);
  for (const char c : text) {
    switch (c) {
      case 'M':
      case '*':
      case '-':
      case 'E':
        out.layers.push_back(static_cast<HybridLayer>(c));
        ++out.segments.back();
        break;
      case '|':
        out.segments.push_back(0);
        break;
      default:
        return Error{"", std::string(kKey), "=\"" + std::string(text) + "\": " + not_modelled(c)};
    }
  }
  if (out.layers.empty()) {
    return Error{"", std::string(kKey), "=\"" + std::string(text) + "\" has no layers"};
  }
  if (out.segments.size() > 1) {
    for (const std::int64_t n : out.segments) {
      if (n == 0) {
        // select_pipeline_segment would build a stage of no layers; stepsim's stages hold at
        // least one (as pipeline_model_parallel_layout's do not have to, but its rules here do).
        return Error{"", std::string(kKey),
                     "=\"" + std::string(text) +
                         "\" has an empty pipeline segment (stages without layers are not "
                         "modelled yet)"};
      }
    }
  }
  return out;
}

std::vector<HybridLayer> hybrid_layer_kinds(const ModelConfig& m) {
  if (!m.hybrid()) return {};
  auto parsed = parse_hybrid_layer_pattern(m.hybrid_layer_pattern);
  return parsed ? std::move(parsed.value().layers) : std::vector<HybridLayer>{};
}

std::vector<std::int64_t> hybrid_segments(const ModelConfig& m) {
  if (!m.hybrid()) return {};
  auto parsed = parse_hybrid_layer_pattern(m.hybrid_layer_pattern);
  return parsed ? std::move(parsed.value().segments) : std::vector<std::int64_t>{};
}

}  // namespace stepsim
