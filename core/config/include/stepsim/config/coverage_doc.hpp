#pragma once
// The generated part of docs/coverage.md: the Megatron-LM arguments stepsim knows and does not
// model, read off the schema's not-modelled table (schema.hpp unmodelled_arguments()).

#include <string>

namespace stepsim {

/// Markdown: the job-changing arguments (a scenario key or launch-line flag naming one exits 2)
/// with the value that leaves the job as modelled, then the harmless ones (noted, not priced).
std::string unmodelled_arguments_markdown();

}  // namespace stepsim
