// A prediction whose figures are not finite is a bug (every input that could make one is
// refused by the loaders' ranges): it is reported as an internal error, never printed.

#include <cmath>
#include <string>

#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

Errors non_finite_fields(const Prediction& p, const std::string& file) {
  Errors errors;
  const auto check = [&](const std::string& key, double v) {
    if (std::isfinite(v)) return;
    errors.push_back(Error{file, "prediction." + key,
                           "=" + std::to_string(v) + " is not finite",
                           ErrorKind::kInternal});
  };
  check("step_time_s", p.step_time_s);
  check("bubble_fraction", p.bubble_fraction);
  check("mfu", p.mfu);
  check("hfu", p.hfu);
  check("tflops_per_gpu", p.tflops_per_gpu);
  check("tokens_per_s", p.tokens_per_s);
  for (const StageSummary& s : p.stages) {
    const std::string at = "stages[" + std::to_string(s.stage) + "].";
    check(at + "busy_s", s.busy_s);
    check(at + "bubble_s", s.bubble_s);
    check(at + "exposed_comm_s", s.exposed_comm_s);
  }
  const CriticalPath& c = p.critical_path;
  check("critical_path.compute_s", c.compute_s);
  check("critical_path.tp_comm_s", c.tp_comm_s);
  check("critical_path.p2p_s", c.p2p_s);
  check("critical_path.dp_comm_s", c.dp_comm_s);
  check("critical_path.optimizer_s", c.optimizer_s);
  check("critical_path.bubble_s", c.bubble_s);
  return errors;
}

}  // namespace stepsim::sim
