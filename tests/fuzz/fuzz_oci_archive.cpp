// The OCI image archive check (util/oci_archive.hpp), from bytes: the image archive a bundle
// carries and reproduce hands to `podman load`. The bytes are written as the archive and walked;
// an archive the walk passes must then read as verify reads it (util/tar_members.hpp: the same
// index.json it counted) and give an image id or refuse with a HarnessError.
#include "fuzz_support.hpp"
#include "image/image_archive.hpp"
#include "util/oci_archive.hpp"
#include "util/tar_members.hpp"

#include <cstdint>
#include <string>

namespace {

constexpr const char* k_target = "fuzz_oci_archive";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace harness::fuzz;
    wipe_scratch();
    const fs::path archive = write_scratch("image.oci.tar", as_text(data, size));
    std::string problem;
    refuse_only_with_harness_errors(k_target, [&] { problem = harness::oci_archive_problem(archive); });
    if (!problem.empty()) {
        return 0;
    }
    refuse_only_with_harness_errors(k_target, [&] {
        // The walk found one plain index.json: the reader verify and reproduce use must find it
        // too (a member over its size bound is refused with a HarnessError, which is fine).
        if (harness::read_tar_members(archive, {"index.json"}).count("index.json") == 0) {
            finding(k_target, "the walk passed an archive whose index.json read_tar_members does not find");
        }
        const std::string id = harness::oci_archive_image_id(archive);
        if (id.size() != 64) {
            finding(k_target, "an image id that is not 64 hex: " + id);
        }
    });
    return 0;
}
