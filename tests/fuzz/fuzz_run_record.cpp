// run.json read back (RunRecord::load, the one reader of a run directory's record), from bytes:
// a run directory can come from shared scratch or a colleague. The bytes are written as run.json
// in an emptied run directory. A record that loads must save as something that loads back to
// the same record: what attach and status act on is what load checked.
#include "fuzz_support.hpp"
#include "run/run_directory.hpp"
#include "run/run_record.hpp"

#include <cstdint>
#include <string>

namespace {

constexpr const char* k_target = "fuzz_run_record";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace harness::fuzz;
    wipe_scratch();
    const fs::path run_dir = scratch_dir() / "run";
    fs::create_directories(run_dir);
    write_scratch(std::string("run/") + harness::run_files::k_record, as_text(data, size));
    refuse_only_with_harness_errors(k_target, [&] {
        const harness::Json saved = harness::RunRecord::load(run_dir).to_json();
        harness::Json again;
        try {
            again = harness::RunRecord::from_json(saved).to_json();
        } catch (const harness::HarnessError& error) {
            finding(k_target, std::string("a record that loaded does not load back once saved: ") + error.what());
        }
        if (again.dump(false) != saved.dump(false)) {
            finding(k_target,
                    "a record that loaded changes once saved and loaded again:\n" + saved.dump(false) + "\n" + again.dump(false));
        }
    });
    return 0;
}
