// The Nsight Systems SQLite reader, from bytes: the file SQLite opens is the input as given, so a
// mutation lands on the header, the b-tree pages or the schema text alike. The reader must refuse
// anything it cannot read with a HarnessError (TraceReadError), never crash, hang or leak.
#include "fuzz_support.hpp"
#include "metrics/nsys_sqlite.hpp"

#include <cstdint>

namespace {

constexpr const char* k_target = "fuzz_nsys_sqlite";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace harness::fuzz;
    wipe_scratch();
    const fs::path file = write_scratch("nsys_0.sqlite", as_text(data, size));
    // The three ways metrics and verify open an export: the device list, the whole read, verify's check.
    refuse_only_with_harness_errors(k_target, [&] { (void)harness::metrics::nsys_kernel_devices(file); });
    refuse_only_with_harness_errors(k_target, [&] { (void)harness::metrics::read_nsys_sqlite(file); });
    refuse_only_with_harness_errors(k_target, [&] { (void)harness::metrics::read_nsys_sqlite(file, 1); });
    const harness::metrics::NsysCheck check = harness::metrics::check_nsys_sqlite(file);
    if (!check.kernel_table && check.problem.empty()) {
        finding(k_target, "check_nsys_sqlite found no kernel table and named no problem");
    }
    return 0;
}
