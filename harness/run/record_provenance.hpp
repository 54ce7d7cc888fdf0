#pragma once
// Records provenance.json (provenance/provenance.hpp) into the run directory once the run is
// over: what ran, from what, where and with which tools. Recording it also removes the raw
// probe reports and scrubs secret values from the logs, the accounting and run.json, so a run
// directory never keeps a secret once its provenance exists.
#include "provenance/env_capture.hpp"
#include "provenance/git_pin.hpp"
#include "provenance/provenance.hpp"
#include "provenance/secret_scrub.hpp"
#include "render/render.hpp"
#include "run/run_record.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct InputPin {
    std::string path; ///< relative to the harness home; absolute when outside it
    std::string sha256;
};

/// The bundle a reproduction ran from (provenance.reproduces).
struct ReproducedBundle {
    std::string bundle;          ///< its file name, <name>.tar.zst
    std::string manifest_sha256; ///< sha256 of its manifest.json
};

/// What the harness knows about itself when a run starts; taken before the job runs, so that
/// an edit to a template or to the checkout while it runs cannot change the record.
struct ProvenanceFacts {
    CheckoutState harness;
    std::vector<InputPin> inputs;           ///< sorted by path, no duplicates
    EnvironmentMap harness_environment;     ///< its secret values are scrubbed too
    SecretScrubber secrets;                 ///< the run's secrets (run_secrets); scrubbed with the environment's
    std::size_t redacted_while_running = 0; ///< replacements made as the job's output streamed
    std::optional<ReproducedBundle> reproduces;
    std::vector<std::string> warnings; ///< e.g. the checkout could not be read
};

/// Hashes the run's inputs, reads the checkout holding `home` and this process's environment.
/// Throws HarnessError only when an input cannot be read.
ProvenanceFacts collect_provenance_facts(const RenderedRun& run, const fs::path& home);

/// provenance.json's content, unscrubbed. `hosts` groups the probes' ranks by hostname;
/// `environment` is the capture of the lowest rank's probe, or of the harness's own
/// environment when no probe reported.
Json make_provenance(const RenderedRun& run, const RunRecord& record, const ProvenanceFacts& facts,
                     const std::vector<ProbeReport>& probes);

/// The post-run step, for every final state: takes (reads and deletes) rendered/probe/, learns
/// the secret values of the harness's and every probe's environment and `facts.secrets`, scrubs every file under
/// logs/ and accounting/ and run.json in place, then writes harness.patch (when the checkout
/// was dirty) and provenance.json atomically into `run_dir`. Warnings (unreadable probe
/// reports...) and the count of redactions go to `out`. Throws HarnessError when a file cannot
/// be scrubbed or written; nothing may save the RunRecord afterwards (it would undo the scrub).
void record_provenance(const fs::path& run_dir, const RenderedRun& run, const RunRecord& record, const ProvenanceFacts& facts,
                       std::ostream& out);

} // namespace harness
