#pragma once
// The Hugging Face importer's families whose experts and attention need more than field
// renames (import_hf_moe.cpp). Internal to import_hf.cpp.

#include <nlohmann/json.hpp>
#include <string>

#include "stepsim/import/import.hpp"

namespace stepsim {

/// DeepSeek-V2/V3's multi-latent attention and experts into `model`.
void import_deepseek(const nlohmann::ordered_json& doc, const std::string& file_label,
                     nlohmann::ordered_json& model, ImportedModel& out, Errors& errors);

/// GPT-OSS's experts, windows, sinks and activation into `model`.
void import_gpt_oss(const nlohmann::ordered_json& doc, const std::string& file_label,
                    nlohmann::ordered_json& model, ImportedModel& out, Errors& errors);

}  // namespace stepsim
