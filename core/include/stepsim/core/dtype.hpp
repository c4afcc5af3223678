#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stepsim {

/// Numeric format of parameters, activations or GEMM operands.
enum class DType : std::uint8_t { kFp32, kFp16, kBf16 };

/// Bytes per element.
constexpr std::int64_t bytes_of(DType t) { return t == DType::kFp32 ? 4 : 2; }

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);  ///< "fp32" | "fp16" | "bf16"

}  // namespace stepsim
