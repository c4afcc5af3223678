#pragma once
// Reads a Chrome trace event JSON file (the format of sim/README.md) into a TraceModel.
// A specialised streaming reader: it walks the events with a hand-written tokenizer and
// appends each slice to its lane's flat arrays, so millions of events load in seconds.

#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

/// Reads and checks the trace file at `path`. Errors name the file and, for a bad event,
/// its key (`traceEvents[12].dur`) and the rule; a syntax error gives line and column.
/// The top level may be an object with `traceEvents` (and optionally `stepsim`) or a bare
/// event array. Events other than `X` (slices), `C` named `memory` (memory counters) and
/// `M` (process/thread names) are skipped.
Result<TraceModel> read_trace_file(const std::string& path);

/// Parses trace JSON held in memory; `file` names it in errors and becomes the model's path.
Result<TraceModel> parse_trace(std::string_view text, const std::string& file);

}  // namespace stepsim::gui
