#include "image/base_image.hpp"

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <thread>

namespace harness {

namespace {

constexpr std::size_t k_image_id_hex = 64;
constexpr auto k_lock_poll = std::chrono::milliseconds(200);

fs::path env_dir(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? fs::path(value) : fs::path();
}

bool writable_dir(const fs::path& dir) { return !dir.empty() && ::access(dir.c_str(), W_OK | X_OK) == 0; }

/// Holds an exclusive flock for as long as it lives. Waiting is polled, so Ctrl-C ends it.
class BuildLock {
public:
    BuildLock(const fs::path& path, const std::string& tag, const ImageContext& context)
        : m_fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
        if (m_fd.get() < 0) {
            throw HarnessError(fmt::format("base image {}: cannot create the lock {}: {}", tag, path.string(), std::strerror(errno)));
        }
        bool told = false;
        while (::flock(m_fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                throw HarnessError(fmt::format("base image {}: cannot lock {}: {}", tag, path.string(), std::strerror(errno)));
            }
            if (!told) {
                context.report(
                    fmt::format("base image {}: another ccl-harness is building it; waiting (lock {})...", tag, path.string()));
                told = true;
            }
            throw_if_interrupted();
            std::this_thread::sleep_for(k_lock_poll);
        }
    }

private:
    Fd m_fd; // closing it releases the lock
};

bool is_image_id(std::string_view text) {
    return text.size() == k_image_id_hex &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

ExitStatus run_checked(const ImageContext& context, const Command& command) {
    ExitStatus status = context.runner.run(command);
    throw_if_interrupted();
    return status;
}

} // namespace

std::string output_tail(const std::string& output, std::size_t lines) {
    std::vector<std::string> all = split(trim(output), '\n');
    if (all.size() > lines) {
        all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
    }
    return terminal_text(join(all, "\n"), true);
}

bool image_exists(const std::string& ref, const ImageContext& context) {
    const ExitStatus status = run_checked(context, {{context.runtime, "image", "exists", ref}, current_environment(), {}});
    if (status.ok()) {
        return true;
    }
    if (status.signal == 0 && status.code == 1) {
        return false;
    }
    throw HarnessError(fmt::format("{} image exists {}: {}\n{}", context.runtime, ref, status.describe(), output_tail(status.output)));
}

std::string inspect_image_id(const std::string& ref, const ImageContext& context) {
    const ExitStatus status = run_checked(
        context, {{context.runtime, "image", "inspect", "--format", "{{.Id}}", ref}, current_environment(), {}});
    std::string id = trim(status.output);
    if (starts_with(id, "sha256:")) {
        id = id.substr(7);
    }
    if (!status.ok() || !is_image_id(id)) {
        throw HarnessError(fmt::format("{} image inspect {}: {}\n{}", context.runtime, ref,
                                       status.ok() ? "no image id in its answer" : status.describe(), output_tail(status.output)));
    }
    return id;
}

fs::path base_lock_path(const std::string& tag, const ImageContext& context) {
    // One lock per machine, not per $TMPDIR: the image store is the machine's, and CTest gives
    // suites their own TMPDIRs.
    fs::path dir = context.lock_dir;
    if (dir.empty()) {
        dir = writable_dir("/var/tmp") ? fs::path("/var/tmp") : env_dir("TMPDIR");
    }
    if (dir.empty()) {
        dir = "/tmp";
    }
    const std::string name = base_name_of_tag(tag).value_or("image");
    const std::string key16 = base_key16_of_tag(tag).value_or("0");
    return dir / fmt::format("ccl-harness-base-{}-{}.lock", name, key16);
}

BaseImage ensure_base_image(const BaseSpec& spec, const ImageContext& context) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    BaseImage image;
    image.tag = base_tag(spec);
    if (image_exists(image.tag, context)) {
        image.id = inspect_image_id(image.tag, context);
        image.seconds = elapsed();
        return image;
    }
    const BuildLock lock(base_lock_path(image.tag, context), image.tag, context);
    // Whoever held the lock before may have built it.
    if (image_exists(image.tag, context)) {
        image.id = inspect_image_id(image.tag, context);
        image.seconds = elapsed();
        return image;
    }

    fs::path scratch_root = context.scratch_root;
    if (scratch_root.empty()) {
        // The tar is over a gigabyte: /var/tmp is disk, /tmp is often memory.
        scratch_root = env_dir("TMPDIR");
        if (scratch_root.empty()) {
            scratch_root = "/var/tmp";
        }
    }
    const ScratchDir scratch(scratch_root, "base");
    const fs::path tar = scratch.path() / "rootfs.tar";

    std::vector<std::string> packages = spec.packages;
    std::sort(packages.begin(), packages.end());
    packages.erase(std::unique(packages.begin(), packages.end()), packages.end());
    std::vector<std::string> argv = {context.mmdebstrap, "--variant=" + spec.variant, "--include=" + join(packages, ",")};
    if (!spec.components.empty()) {
        argv.push_back("--components=" + join(spec.components, ","));
    }
    argv.insert(argv.end(), {spec.suite, tar.string(), spec.mirror});
    // SOURCE_DATE_EPOCH makes mmdebstrap's tar reproducible: the same package versions, the same bytes.
    Environment env = current_environment({{"SOURCE_DATE_EPOCH", std::to_string(spec.source_date_epoch)}});
    context.report(
        fmt::format("base image {}: building with mmdebstrap from {} {} (about a minute)...", image.tag, spec.mirror, spec.suite));
    const ExitStatus debootstrap = run_checked(context, {argv, env, scratch.path()});
    if (!debootstrap.ok()) {
        throw HarnessError(fmt::format("base image {}: mmdebstrap failed ({}) for {}:\n{}", image.tag, debootstrap.describe(),
                                       spec.path.string(), output_tail(debootstrap.output)));
    }

    context.report(fmt::format("base image {}: importing into {}...", image.tag, context.runtime));
    const std::vector<std::string> import = {
        context.runtime,
        "import",
        "--quiet",
        "--change",
        R"(CMD ["/bin/bash"])",
        "--change",
        "WORKDIR /",
        "--change",
        "ENV LANG=C.UTF-8",
        "--change",
        "LABEL org.ccl-harness.base.key=" + base_key(spec),
        "--message",
        fmt::format("ccl-harness base {} from {}", spec.name, spec.path.filename().string()),
        tar.string(),
        image.tag,
    };
    const ExitStatus imported = run_checked(context, {import, current_environment(), {}});
    if (!imported.ok()) {
        throw HarnessError(fmt::format("base image {}: {} import failed ({}):\n{}", image.tag, context.runtime, imported.describe(),
                                       output_tail(imported.output)));
    }
    image.id = inspect_image_id(image.tag, context);
    image.built = true;
    image.seconds = elapsed();
    return image;
}

} // namespace harness
