#include "bundle/bundle_verify.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct VerifyCommandOptions {
    std::vector<std::string> bundles;
    bool json = false;
    bool quiet = false;
};

// Paths and messages name what is inside the bundle: escaped, so that a crafted file name cannot
// rewrite the verdict line on the terminal.
void print_report(const BundleReport& report, bool quiet) {
    const std::string bundle = terminal_text(report.bundle);
    if (!quiet) {
        for (const BundleProblem& problem : report.problems) {
            std::cout << (problem.path.empty()
                              ? fmt::format("{}: {}\n", bundle, terminal_text(problem.message))
                              : fmt::format("{}: {}: {}\n", bundle, terminal_text(problem.path), terminal_text(problem.message)));
        }
    }
    for (const BundleProblem& warning : report.warnings) {
        // Even with -q: a valid bundle whose numbers cannot be right must not pass unnoticed.
        std::cerr << fmt::format("warning: {}: {}: {}\n", bundle, terminal_text(warning.path), terminal_text(warning.message));
    }
    const std::size_t count = report.problems.size();
    std::string marks = report.ingested ? std::string(", ") + k_unpinned_ingested : "";
    if (report.partial()) {
        marks += ", " + report.partial_summary();
    }
    std::cout << (report.valid() ? fmt::format("{}: valid{} ({} files, {} traces, {} steps)\n", bundle, marks, report.files,
                                               report.traces.size(), report.steps())
                                 : fmt::format("{}: invalid ({} problem{})\n", bundle, count, count == 1 ? "" : "s"));
}

int run_verify(const VerifyCommandOptions& options) {
    // Ctrl-C becomes an exception that unwinds through the scratch directory's cleanup.
    install_interrupt_handlers();
    Json results = Json::array();
    int status = k_exit_ok;
    for (const std::string& bundle : options.bundles) {
        try {
            const BundleReport report = verify_bundle(bundle);
            status = std::max(status, report.valid() ? int{k_exit_ok} : int{k_exit_failure});
            if (options.json) {
                results.push_back(bundle_report_to_json(report));
            } else {
                print_report(report, options.quiet || g_verbosity == Verbosity::quiet);
            }
        } catch (const HarnessError& e) {
            if (e.code() == k_exit_interrupted) {
                throw;
            }
            // One unusable bundle does not stop the others from being checked.
            status = std::max(status, e.code());
            if (options.json) {
                Json entry = Json::object();
                entry["bundle"] = bundle;
                entry["valid"] = false;
                entry["error"] = e.what();
                results.push_back(std::move(entry));
            } else {
                std::cerr << fmt::format("ccl-harness: error: {}\n", terminal_text(e.what()));
            }
        }
    }
    if (options.json) {
        std::cout << (results.as_array().size() == 1 ? results.as_array().front() : results).dump();
    }
    return status;
}

} // namespace

void add_verify(CLI::App& sub, Action& action) {
    auto options = std::make_shared<VerifyCommandOptions>();
    sub.add_option("bundles", options->bundles, "bundles: <name>.tar.zst archives or unpacked <name>/ directories")->required();
    sub.add_flag("--json", options->json, "print the report as JSON on stdout: one object, or an array of them for several bundles");
    sub.add_flag("-q,--quiet", options->quiet, "print one summary line per bundle, not its problems");
    sub.footer("Checks every checksum and size against manifest.json, missing and unlisted files, the card\n"
               "(validate), every trace (parses, step markers), the rank traces against the card's total_count,\n"
               "the provenance pins and run.json; every problem is listed as BUNDLE: PATH: MESSAGE.\n"
               "A bundle made by `ccl-harness ingest` (a job the harness did not run) is reported as\n"
               "\"valid, unpinned, ingested\" (JSON: \"provenance\": \"unpinned, ingested\"); one holding some ranks'\n"
               "traces only (ingest --ranks) adds \"partial: ranks 0 of 4\" (JSON: \"partial\": {ranks_present,\n"
               "total_count, summary}), its traces held to exactly the ranks its card's metric_source.ranks_present\n"
               "and provenance.json's ingested.ranks_present claim.\n"
               "JSON keys: bundle, valid, name, files, steps, problems [{path, message}], warnings [{path, message}]\n"
               "(a metric outside its physical bounds, traces of another device than the card's), traces [{path, form,\n"
               "compressed, events, steps, step_marker}], provenance, partial; error (unusable input).\n"
               "An archive is unpacked safely into a scratch directory under $TMPDIR, removed afterwards.\n"
               "Exit status: 0 every bundle valid, 1 a bundle is invalid (or its archive damaged or truncated),\n"
               "2 unusable input (no such path, not a .tar.zst, an archive refused as unsafe), 130 interrupted.\n"
               "Examples:\n"
               "  ccl-harness verify results/tiny-ddp-20261123T112800Z-4d4738.tar.zst\n"
               "  ccl-harness verify --json bundles/*.tar.zst");
    sub.callback([options, &action] { action = [options] { return run_verify(*options); }; });
}

} // namespace harness::cli
