#pragma once
// The words the text and JSON reports share: the schedule's name and the number format (the
// scenario's settings are spelled by config/enum_names.hpp). Private to the report library.

#include <string>
#include <string_view>

#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim::report_words {

/// `v` through printf's `format` (one double).
std::string fmt(const char* format, double v);

std::string_view schedule_name(ScheduleKind k);

}  // namespace stepsim::sim::report_words
