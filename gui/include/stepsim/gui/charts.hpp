#pragma once
// Qt Charts views of a document: per-stage stacked bars (busy / bubble / exposed comm) and
// memory over time per rank with the capacity line and the peak. Data comes from the model
// layer (stage_stats.hpp, aggregation.hpp); these functions only build charts.

#include <QChartView>
#include <QWidget>

#include "stepsim/gui/document.hpp"

namespace stepsim::gui {

/// Stacked bars per stage (and per trace when several): busy, bubble, exposed comm, in ms.
QChartView* make_stage_chart(const TimelineDocument& document, QWidget* parent = nullptr);

/// Memory in use per rank over the step (GiB against ms), the capacity as a dashed line and
/// each rank's peak as a marker, the highest one labelled.
QChartView* make_memory_chart(const TimelineDocument& document, QWidget* parent = nullptr);

/// A colour per series index (Tableau 10 less its red and grey, which mark the highest
/// peak and the capacity), for ranks.
QColor series_color(std::size_t index);

}  // namespace stepsim::gui
