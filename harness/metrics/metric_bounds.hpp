#pragma once
// Values no run can have: mfu over 100 %, a step of no time, a fraction outside 0..100 %. Each is
// kept as computed (it says what the traces and the card gave) and flagged with why it cannot be
// right, so that metrics, verify and compare never show it as a result. The traces' own device
// names are checked against the card's, the usual cause of an impossible mfu.
#include "metrics/metrics.hpp"

#include <string>
#include <vector>

namespace harness::metrics {

/// Why `value` of metric `name` cannot be physically right (mfu over 100 %, a step of no time, a
/// fraction outside 0..100 %); "" when it can. compare applies it to stored metrics.json too.
std::string implausible_value(const std::string& name, double value);

/// "" when `devices` (Kineto's deviceProperties names) fit `card_model` (xpu_spec.model, e.g.
/// nvidia_a100_80gb), or when either says too little to tell; else the sentence that says which
/// device the traces ran on and what the card claims.
std::string device_mismatch(const std::string& card_model, const std::vector<std::string>& devices);

/// Sets MetricValue::implausible on every value outside its physical bounds, and
/// MetricsReport::device_mismatch (also a note) from the ranks' device names and `card_model`.
void check_bounds(MetricsReport& report, const std::string& card_model);

} // namespace harness::metrics
