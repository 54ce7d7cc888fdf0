#include "bundle/bundle_unpack.hpp"

#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/scratch_dir.hpp"

#include <fmt/format.h>
#include <vector>

namespace harness {

fs::path unpack_bundle(const fs::path& archive, const fs::path& dest) {
    const std::string name = archive.string();
    try {
        extract_tar_zst_safely(archive, dest);
    } catch (const ScratchSpaceError&) {
        throw; // the machine's fault, not the bundle's
    } catch (const HarnessError& failure) {
        // A damaged archive is bad input here like any other (verify tells the kinds apart).
        if (failure.code() == k_exit_interrupted) {
            throw;
        }
        const std::string what = failure.what();
        throw input_error(what.find(name) == std::string::npos ? name + ": " + what : what);
    }
    std::vector<fs::path> top;
    for (const auto& entry : fs::directory_iterator(dest)) {
        top.push_back(entry.path());
    }
    if (top.size() != 1 || !fs::is_directory(top.front())) {
        throw input_error(fmt::format("{}: not a bundle: expected one top-level directory <name>/", name));
    }
    return top.front();
}

} // namespace harness
