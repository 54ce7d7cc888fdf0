// The card reader as `validate --strict` runs it, from bytes: YAML parse, schema checks, then
// the cluster and the plan's runnability checks, and the --json report of what was found.
// Nothing is written.
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "card/yaml_document.hpp"
#include "fuzz_support.hpp"
#include "plan/plan.hpp"
#include "plan/validate.hpp"
#include "util/home.hpp"

#include <cstdint>
#include <string>

namespace {

constexpr const char* k_target = "fuzz_card";
constexpr const char* k_display_name = "fuzz.yaml";

harness::ValidationResult validate_text(const std::string& text) {
    using namespace harness;
    ValidationResult result;
    result.file = k_display_name;
    try {
        const WorkloadCard card = WorkloadCard::from_document(YamlDocument::parse(text, k_display_name));
        result.diagnostics = card.diagnostics();
        // launch.cluster naming a path is read as a profile: the card is trusted input (the
        // threat model), and a fuzzer that writes "/dev/zero" there finds only that. Named
        // profiles (clusters/*.yaml) and the accelerator rule are planned.
        if (!result.diagnostics.has_errors() && card.launch.cluster.find('/') == std::string::npos) {
            const ClusterProfile cluster = resolve_cluster(card, "", harness_home());
            make_plan(card, cluster, true, result.diagnostics);
        }
    } catch (const HarnessError& e) {
        result.diagnostics.error(k_display_name, "", e.what());
        result.unreadable = true;
    }
    return result;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(harness::fuzz::as_text(data, size));
    harness::fuzz::refuse_only_with_harness_errors(k_target, [&] {
        const harness::ValidationResult result = validate_text(text);
        // The report is what --json prints: building it walks every message once more.
        const std::string report = harness::validation_to_json({result}).dump(false);
        if (report.empty()) {
            harness::fuzz::finding(k_target, "empty validation report");
        }
    });
    return 0;
}
