#pragma once
// Output files that may be gzip-compressed: a path ending in ".gz" is written as a gzip
// stream (what Perfetto and stepsim-viewer open directly), anything else as is. Large
// traces compress about tenfold: most of a trace is repeated keys and similar numbers.

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"

namespace stepsim {

/// True when `path` names a gzip file (ends in ".gz").
bool is_gzip_path(std::string_view path);

/// Creates `path` (truncating it) and lets `write` fill it; compressed when is_gzip_path.
/// The compressed bytes depend only on what `write` writes (the gzip header carries no
/// time or name), so outputs stay byte-identical run to run. Errors name the file and are
/// runtime errors (the disk, not the input).
Status write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

/// True when `data` starts with the gzip magic bytes.
bool looks_gzipped(std::string_view data);

/// The decompressed content of the gzip data `data` (of file `file`, for messages); an
/// error when it is not valid gzip or when it would exceed `max_bytes` once decompressed.
Result<std::string> gunzip(std::string_view data, const std::string& file, std::size_t max_bytes);

}  // namespace stepsim
