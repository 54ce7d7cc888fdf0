#include "bundle/bundle_pack.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"
#include "util/terminal.hpp"
#include "workflows/run_image.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct PackCommandOptions {
    fs::path run_dir;
    PackOptions pack;
    bool with_image = false;
    bool json = false;
};

int run_pack(const PackCommandOptions& options) {
    // Ctrl-C becomes a flag the packer checks between chunks, so it can remove its temporary file.
    install_interrupt_handlers();
    PackOptions pack = options.pack;
    const bool progress = progress_wanted() && g_verbosity != Verbosity::quiet;
    if (progress) {
        // One line, rewritten: which file is being compressed (traces can take a while).
        pack.on_entry = [](const std::string& entry) { std::cerr << "\r\033[Kpacking " << terminal_text(entry) << std::flush; };
    }
    if (options.with_image) {
        SystemProcessRunner runner;
        add_image_archive(options.run_dir, runner, std::cerr);
    }
    const PackResult result = pack_run(options.run_dir, pack);
    if (progress) {
        std::cerr << "\r\033[K" << std::flush;
    }
    if (options.json) {
        Json out = Json::object();
        out["bundle"] = result.bundle.string();
        out["name"] = result.name;
        out["size"] = static_cast<long long>(result.size);
        out["files"] = static_cast<long long>(result.files);
        out["sha256"] = result.sha256;
        out["manifest_sha256"] = result.manifest_sha256;
        out["traces"] = json_string_array(result.trace_kinds);
        std::cout << out.dump();
        return k_exit_ok;
    }
    std::cout << fmt::format("bundle: {}\n  {} bytes, {} files\n  sha256: {}\n", result.bundle.string(), result.size, result.files,
                             result.sha256);
    return k_exit_ok;
}

} // namespace

void add_pack(CLI::App& sub, Action& action) {
    auto options = std::make_shared<PackCommandOptions>();
    sub.add_option("run_dir", options->run_dir, "a completed run directory (results/<run-id>/)")->required();
    sub.add_option("--out", options->pack.out_file, "the archive to write (default: <run-id>.tar.zst beside the run directory)");
    sub.add_flag("--force", options->pack.force, "replace the archive when it exists");
    sub.add_option("--threads", options->pack.threads, "zstd worker threads (default: all hardware threads; the bytes are the same)");
    sub.add_flag("--with-image", options->with_image,
                 "add the container image the run ran, as an OCI archive (container/image.oci.tar), so that the bundle "
                 "reproduces offline; needs the runtime that built it (podman, podman-hpc)");
    sub.add_flag("--json", options->json, "print the result as one JSON object");
    sub.footer("The bundle <run-id>/ holds <run-id>.yaml (the effective card, trace_url and metric_source.traces\n"
               "filled in), the traces, scripts/ (what ran), logs/, accounting/, run.json, provenance.json and\n"
               "manifest.json (size and sha256 of every other file); docs/bundle.md has the layout. Packing the\n"
               "same run directory twice gives identical bytes.\n"
               "Exit status: 0 packed, 1 failed (nothing written), 2 not a packable run directory, 130 interrupted.\n"
               "Examples:\n"
               "  ccl-harness pack results/tiny-ddp-20261123T020000Z-1a2b3c\n"
               "  ccl-harness pack results/tiny-ddp-20261123T020000Z-1a2b3c --out /tmp/tiny.tar.zst --json");
    sub.callback([options, &action] { action = [options] { return run_pack(*options); }; });
}

} // namespace harness::cli
