#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stepsim {

/// Numeric format of parameters, activations or GEMM operands.
/// kFp8 is E4M3 (Transformer Engine's forward format; GEMM operands only: parameters are
/// never kept in it, and a GEMM with FP8 operands writes bf16).
enum class DType : std::uint8_t { kFp32, kFp16, kBf16, kFp8 };

/// Bytes per element.
constexpr std::int64_t bytes_of(DType t) {
  return t == DType::kFp32 ? 4 : t == DType::kFp8 ? 1 : 2;
}

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);  ///< "fp32" | "fp16" | "bf16" | "fp8"

}  // namespace stepsim
