#pragma once
// The one way stepsim reads a JSON file or text (scenario, system, profile, sweep, Hugging Face
// config, calibration journal and records, the viewer's summary). Strict where nlohmann is
// lenient or throws: a number that overflows a double, nesting deeper than a limit, a key given
// twice in one object, a NUL byte, anything after the top-level value and a file over a size
// limit are all errors naming the file and the key path (e.g. `training.sizes[3]`). Nothing
// here throws. Including this header requires nlohmann_json on the include path.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"

namespace stepsim {

struct JsonLimits {
  /// Deepest nesting of objects and arrays accepted (the top level is depth 1). Every file
  /// stepsim reads nests 6 or fewer deep; the limit keeps every recursive walk of a document
  /// (dump, destruction, validation) far from the stack's end.
  int max_depth = 64;
};

/// Input files larger than this are refused unread: the largest shipped input (a calibration
/// profile) is well under 1 MiB, and a file of hundreds of MiB is not a configuration.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{64} << 20;

/// Why `path` cannot be read as an input file, in words that say what the path is ("cannot
/// open: no such file", "is a directory, not a file", "is a FIFO (named pipe), not a regular
/// file: ...", "cannot open: too many levels of symbolic links ..."), or "" for a readable
/// regular file. Only stats the path: never opens it, so never blocks on a special file.
std::string input_file_problem(const std::string& path);

/// The whole file at `path`, or an error naming it when it cannot be opened, is not a
/// regular file (a directory, FIFO, device or socket: refused without blocking, with the
/// words of input_file_problem), cannot be read or is larger than `max_bytes` (the message
/// gives both sizes).
Result<std::string> read_input_file(const std::string& path,
                                    std::size_t max_bytes = kMaxConfigFileBytes);

/// Parses `text` strictly (see the header comment). `file` names the input in every error.
/// Syntax errors give "line L, column C"; errors inside a value name its key path.
Result<nlohmann::json> parse_json_text(std::string_view text, const std::string& file,
                                       const JsonLimits& limits = {});

/// read_input_file then parse_json_text.
Result<nlohmann::json> read_json_file(const std::string& path,
                                      std::size_t max_bytes = kMaxConfigFileBytes,
                                      const JsonLimits& limits = {});

}  // namespace stepsim
