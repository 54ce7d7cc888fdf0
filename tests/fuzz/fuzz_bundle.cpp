// The bundle extractor, from bytes: a .tar.zst (or, when the bytes do not start a zstd frame, a
// tar the target wraps in one, so that mutations reach the tar headers) unpacked by the safe
// extractor into an emptied scratch directory, then verify's checks on what it wrote.
#include "bundle/bundle_verify.hpp"
#include "fuzz_support.hpp"
#include "util/archive.hpp"

#include <cstdint>
#include <string>
#include <system_error>

namespace {

constexpr const char* k_target = "fuzz_bundle";

/// What the extractor promises whatever the archive: only plain files and directories, all of
/// them under `dest`, and nothing beside `dest` but the archive.
void check_containment(const harness::fuzz::fs::path& archive, const harness::fuzz::fs::path& dest) {
    namespace fs = harness::fuzz::fs;
    for (const auto& entry : fs::directory_iterator(harness::fuzz::scratch_dir())) {
        if (entry.path() != archive && entry.path() != dest) {
            harness::fuzz::finding(k_target, "written outside the destination: " + entry.path().string());
        }
    }
    if (!fs::exists(dest)) {
        return;
    }
    for (const auto& entry : fs::recursive_directory_iterator(dest)) {
        const fs::file_status status = entry.symlink_status();
        if (!fs::is_regular_file(status) && !fs::is_directory(status)) {
            harness::fuzz::finding(k_target, "extracted something that is not a file or directory: " + entry.path().string());
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace harness::fuzz;
    const std::string_view bytes = as_text(data, size);
    wipe_scratch();
    const fs::path archive = write_scratch("fuzz.tar.zst", has_zstd_magic(bytes) ? std::string(bytes) : zstd_frame(bytes));
    const fs::path dest = scratch_dir() / "unpacked";
    bool extracted = false;
    refuse_only_with_harness_errors(k_target, [&] {
        harness::extract_tar_zst_safely(archive, dest);
        extracted = true;
    });
    if (!extracted && fs::exists(dest)) {
        finding(k_target, "the extractor refused the archive but left " + dest.string());
    }
    check_containment(archive, dest);
    if (!extracted) {
        return 0;
    }
    refuse_only_with_harness_errors(k_target, [&] {
        const harness::BundleReport report = harness::verify_bundle(dest);
        (void)harness::bundle_report_to_json(report).dump(false);
        if (!report.valid() && report.problems.front().message.empty()) {
            finding(k_target, "a problem without a message");
        }
    });
    check_containment(archive, dest);
    return 0;
}
