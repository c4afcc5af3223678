#include "stepsim/gui/sweep_traces.hpp"

#include <memory>
#include <sstream>

#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/report/predict.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/sweep/sweep_plan.hpp"

namespace stepsim::gui {

Result<SweepTraceProvider> make_sweep_trace_provider(const std::string& sweep_file,
                                                     const std::string& scenarios_dir) {
  auto spec = load_sweep_file(sweep_file, LoadOptions{scenarios_dir});
  if (!spec) return spec.errors();
  auto shared = std::make_shared<const SweepSpec>(std::move(spec).value());
  return SweepTraceProvider([shared](std::int64_t index) -> Result<std::string> {
    auto w = sim::sweep_configuration(*shared, index);
    if (!w) return w.errors();
    sim::PredictOptions options;
    options.keep_timeline = true;
    const sim::PredictOutcome outcome = sim::predict(*w, options);
    if (!outcome.run) return outcome.errors;
    std::ostringstream trace;
    sim::write_chrome_trace(outcome.run->result.timeline, outcome.run->result.prediction.stages,
                            trace);
    return trace.str();
  });
}

}  // namespace stepsim::gui
