#pragma once
// Framework planning: how the card's description of a run (model, precision, dataset, degrees,
// window) becomes one framework's own configuration, and which fields a framework cannot honour.
// One file per framework (harness/frameworks/<name>.cpp); each cites the framework source, at
// the ref the reference cards pin, that its rules come from (frameworks/<name>/<ref>.yaml is the
// contract).
#include "../plan.hpp"

#include <string>

namespace harness {

/// Reports a runnability problem about a card field at the severity make_plan was asked for
/// (an error with --strict, else a warning).
class PlanFindings {
public:
    virtual ~PlanFindings() = default;
    virtual void problem(const std::string& field, const std::string& message) = 0;
};

/// Sets one framework value (templates read it as {{fw.KEY}}; "true"/"false" become flags usable
/// as {{#fw.KEY}} sections) and records why, for explain and plan.json.
void set_framework_value(Plan& plan, const std::string& key, const std::string& value, const std::string& because);

/// Dispatches to the framework's own planning step (no-op for a framework without one).
void plan_framework(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

// One per framework, each in its own file.
void plan_torchtitan(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_megatron(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_vllm(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_sglang(const WorkloadCard& card, Plan& plan, PlanFindings& findings);
void plan_maxtext(const WorkloadCard& card, Plan& plan, PlanFindings& findings);

} // namespace harness
