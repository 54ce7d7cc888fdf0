// The two trace readers, from bytes: the metrics module's streaming reader (read_trace) and
// verify's check (check_trace), on the bytes as given and, unless they already are gzip, on the
// same bytes gzip'd, so that mutations of the JSON also reach the inflating paths.
#include "bundle/trace_check.hpp"
#include "fuzz_support.hpp"
#include "metrics/trace_events.hpp"

#include <cstdint>
#include <string>

namespace {

constexpr const char* k_target = "fuzz_trace";

void read_both_ways(const harness::fuzz::fs::path& file) {
    // A small buffer: the reader's growth path (an event larger than the buffer) is then taken
    // by ordinary inputs, and the default 8 MiB, mapped afresh per call, would cost more than the
    // parse.
    harness::metrics::ReadOptions options;
    options.buffer_bytes = 256;
    harness::fuzz::refuse_only_with_harness_errors(k_target, [&] { (void)harness::metrics::read_trace(file, options); });
    // check_trace's contract: every way a trace can be wrong comes back in `problem`.
    try {
        const harness::TraceCheck check = harness::check_trace(file);
        if (check.form.empty() && check.problem.empty()) {
            harness::fuzz::finding(k_target, "check_trace found no form and no problem");
        }
    } catch (const std::exception& e) {
        harness::fuzz::finding(k_target, std::string("check_trace threw: ") + e.what());
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace harness::fuzz;
    const std::string_view bytes = as_text(data, size);
    wipe_scratch();
    // The name decides kineto against xla in check_trace; the size picks one, so the choice is
    // part of the input and a reproducer replays the same way.
    const std::string name = size % 2 == 0 ? "kineto_trace_0.json" : "host0.trace.json";
    read_both_ways(write_scratch(name, bytes));
    if (!has_gzip_magic(bytes)) {
        read_both_ways(write_scratch(name + ".gz", gzip(bytes)));
    }
    return 0;
}
