#pragma once
// The words the text and JSON reports share: the scenario's settings as they spell them, and
// the number format. Private to the report library.

#include <string>
#include <string_view>

#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim::report_words {

/// `v` through printf's `format` (one double).
std::string fmt(const char* format, double v);

std::string_view schedule_name(ScheduleKind k);
std::string_view granularity_key(RecomputeGranularity g);
std::string_view cp_comm_key(CpCommType c);
std::string_view dispatcher_key(MoeDispatcher d);
std::string_view method_key(RecomputeMethod m);

}  // namespace stepsim::sim::report_words
