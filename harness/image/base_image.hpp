#pragma once
// A base image made from Debian packages without a registry: mmdebstrap writes a root file
// system as a tar, `podman import` makes it an image tagged by the spec's key (base_tag). An
// image already there under that tag is reused; two harnesses never build the same one at once.
#include "image/base_spec.hpp"
#include "image/image_context.hpp"

#include <string>

namespace harness {

struct BaseImage {
    std::string tag;    ///< base_tag(spec)
    std::string id;     ///< podman's image id, 64 lower-case hex
    bool built = false; ///< false: it was there already (or another harness built it meanwhile)
    double seconds = 0; ///< time spent here, waiting for another harness's build included
};

/// Makes sure the image base_tag(spec) exists in `context.runtime`'s storage and returns it.
/// Building takes about a minute and network to spec.mirror: the temporary tar is removed on
/// every way out (failure and Ctrl-C included). While one harness builds a base, another that
/// wants the same base waits on a lock file keyed by the tag and then reuses it. Throws
/// HarnessError (exit 1) with the tool's last lines when mmdebstrap or podman fails, exit 130
/// when interrupted.
BaseImage ensure_base_image(const BaseSpec& spec, const ImageContext& context);

/// The lock file ensure_base_image holds while building `tag`: <lock dir>/ccl-harness-base-<name>-<key16>.lock.
fs::path base_lock_path(const std::string& tag, const ImageContext& context);

/// `runtime image inspect --format {{.Id}} REF` as 64 lower-case hex; throws HarnessError naming
/// `ref` when the runtime fails or answers anything else.
std::string inspect_image_id(const std::string& ref, const ImageContext& context);

/// `runtime image exists REF`: true for exit 0, false for exit 1; throws for anything else.
bool image_exists(const std::string& ref, const ImageContext& context);

/// The last `lines` lines of a tool's output, made safe for a terminal, for error messages.
std::string output_tail(const std::string& output, std::size_t lines = 15);

} // namespace harness
