#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stepsim {

/// Numeric format of parameters, activations or GEMM operands.
/// kFp8 is E4M3 (Transformer Engine's forward format; GEMM operands only: parameters are
/// never kept in it, and a GEMM with FP8 operands writes bf16). kFp4 is NVFP4: E2M1 values,
/// two to a byte, with an E4M3 scale per 16 (GEMM operands only; the GEMM writes bf16).
enum class DType : std::uint8_t { kFp32, kFp16, kBf16, kFp8, kFp4 };

/// Bytes per element; kFp4 packs two elements in a byte, and is never an element store of
/// its own (gemm_bytes_of counts its operands): 1, the byte an element occupies at most.
constexpr std::int64_t bytes_of(DType t) {
  return t == DType::kFp32 ? 4 : (t == DType::kFp8 || t == DType::kFp4) ? 1 : 2;
}

/// Bytes a GEMM with `t` operands reads and writes: FP8 GEMMs (Transformer Engine's
/// cuBLASLt calls) write their output in bf16.
constexpr double gemm_bytes_of(DType t, std::int64_t m, std::int64_t n, std::int64_t k,
                               std::int64_t batch) {
  if (t == DType::kFp4) {
    // Half a byte per operand element and an E4M3 scale per 16 (9/16 byte), bf16 output.
    return static_cast<double>(batch) * (static_cast<double>(m * k + k * n) * 9.0 / 16.0 +
                                         2.0 * static_cast<double>(m * n));
  }
  if (t == DType::kFp8) {
    return static_cast<double>(batch) * (static_cast<double>(m * k + k * n) +
                                         2.0 * static_cast<double>(m * n));
  }
  return static_cast<double>(bytes_of(t) * batch) * static_cast<double>(m * k + k * n + m * n);
}

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);  ///< "fp32" | "fp16" | "bf16" | "fp8"

}  // namespace stepsim
