#include "stepsim/base/dtype.hpp"

namespace stepsim {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::kFp32: return "fp32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kFp8: return "fp8";
    case DType::kFp4: return "fp4";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32") return DType::kFp32;
  if (s == "fp16") return DType::kFp16;
  if (s == "bf16") return DType::kBf16;
  if (s == "fp8") return DType::kFp8;
  if (s == "fp4") return DType::kFp4;
  return std::nullopt;
}

}  // namespace stepsim
