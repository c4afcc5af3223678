#pragma once
// Sliding-window attention as Megatron-Core runs it (--window-size, --window-attn-skip-freq):
// which layers attend through the window (megatron/core/transformer/utils.py
// is_layer_window_attention, read by TEDotProductAttention.__init__ in
// megatron/core/extensions/transformer_engine.py, which hands config.window_size to Transformer
// Engine's DotProductAttention for those layers only) and how many score entries the causal band
// holds.

#include <cstdint>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// Megatron-LM's --window-attn-skip-freq (arguments.py moe_freq_type): an integer N makes layer
/// number l (1-based) a window layer when l % N != 0 (one full-attention layer after N - 1
/// window layers); a list pattern such as "[1,1,1,0]*3" gives one entry per layer (1 = window).
/// The result has `num_layers` entries, index 0 = layer number 1 (true = window); an error (key
/// model.window_attn_skip_freq) when the text does not parse, an entry is not 0 or 1, or the
/// length is not num_layers.
Result<std::vector<bool>> parse_window_attn_skip_freq(std::string_view text,
                                                      std::int64_t num_layers);

/// Keys a query of a window layer attends to at most, its own position included: left + 1 for
/// window_size (left, 0) with left >= 0; 0 when there is no window (none given, or left = -1),
/// or when the window holds the whole sequence (left + 1 >= seq_length: the band is the causal
/// triangle, the same kernel and work as without a window).
std::int64_t window_keys(const ModelConfig& m);

/// The window layers of a validated model, one entry per layer (index 0 = layer number 1): all
/// false when window_keys(m) is 0, all true without window_attn_skip_freq.
std::vector<bool> window_layer_pattern(const ModelConfig& m);

/// Score entries of a causal band of `seq` queries each attending to at most `window` keys
/// (itself and the window - 1 before it): sum over i < seq of min(i + 1, window) =
/// window * seq - window * (window - 1) / 2 for window <= seq; seq * (seq + 1) / 2 otherwise.
double causal_band_scores(std::int64_t seq, std::int64_t window);

}  // namespace stepsim
