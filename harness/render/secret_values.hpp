#pragma once
// Secret values kept out of what render writes. A secret reaches the job through its environment
// only (env.sh names it, the executor hands the value over); anywhere else in a render its value
// would be copied into the run directory, the bundle, compare's page and submit's upload.
#include "card/card.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "util/json.hpp"
#include "util/process.hpp"

#include <string>
#include <vector>

namespace harness {

struct RenderedFile;

/// The values of the secret-named variables of the job's environment (`job_env`: the card's
/// launch.env and communication env, as the plan or the card holds them) and of the harness's
/// own environment, which the executor hands to the job; each with the variable's name.
class SecretValues {
public:
    SecretValues(const Environment& job_env, const EnvironmentMap& environment);

    /// For records (plan.json, logs, scripts kept as they ran): every value replaced by [REDACTED].
    const SecretScrubber& scrubber() const { return m_scrubber; }

    /// The card as a run directory and a bundle keep it: the secret-named entries of launch.env
    /// and of the communication library's env read [REDACTED], and every other scalar that holds a
    /// secret value is rewritten with [REDACTED] node by node, so that the document keeps its
    /// shape (a plain `[REDACTED]` would read as a list). Comments are kept only when nothing
    /// needed redacting: the card's own text is returned then.
    std::string card_record(const WorkloadCard& card) const;

    /// Throws an input error when a file the job runs holds a secret value: it cannot be replaced
    /// there (the job would run with the placeholder), so the card must not put it there. The
    /// message names the launch.args entry at its card line when one holds it, else the file, and
    /// the variable whose value it is. The session's secret-named variables that hold an absolute
    /// path (SSH_AUTH_SOCK) are not refused: a path says where a secret is, not what it is.
    void refuse_in(const RenderedFile& file, const WorkloadCard& card) const;

private:
    struct Known {
        std::string name;
        std::string value;
    };
    std::vector<Known> m_known;
    SecretScrubber m_scrubber;
};

} // namespace harness
