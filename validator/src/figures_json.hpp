#pragma once
// A stage's figures (busy, communicating, waiting, idle, overlapped) as JSON: one writer for
// the validation report (report_io.cpp) and the regression record (record.cpp), whose
// "measured_stages" regress reads back with the same keys.

#include <nlohmann/json.hpp>

#include "stepsim/validator/validate.hpp"

namespace stepsim::calib {

inline nlohmann::ordered_json figures_json(const StageFigures& f) {
  return {{"busy_s", f.busy_s},
          {"comm_s", f.comm_s},
          {"wait_s", f.wait_s},
          {"idle_s", f.idle_s},
          {"overlap_s", f.overlap_s}};
}

}  // namespace stepsim::calib
