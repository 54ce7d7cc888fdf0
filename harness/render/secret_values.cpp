#include "render/secret_values.hpp"

#include "card/yaml_document.hpp"
#include "render/render.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

void add_known(const std::string& name, const std::string& value, std::vector<std::string>& seen_values,
               std::vector<std::pair<std::string, std::string>>& out) {
    if (!is_secret_name(name) || value == k_redacted || value.size() < SecretScrubber::k_min_length) {
        return;
    }
    for (const std::string& seen : seen_values) {
        if (seen == value) {
            return;
        }
    }
    seen_values.push_back(value);
    out.emplace_back(name, value);
}

void scrub_scalars(YAML::Node node, const SecretScrubber& scrubber) {
    if (node.IsScalar()) {
        std::size_t replaced = 0;
        std::string scrubbed = scrubber.scrub(node.Scalar(), &replaced);
        if (replaced > 0) {
            node = scrubbed;
        }
        return;
    }
    if (node.IsSequence()) {
        for (YAML::Node item : node) {
            scrub_scalars(item, scrubber);
        }
    } else if (node.IsMap()) {
        for (auto entry : node) {
            scrub_scalars(entry.second, scrubber);
        }
    }
}

} // namespace

SecretValues::SecretValues(const Environment& job_env, const EnvironmentMap& environment) {
    std::vector<std::string> seen;
    std::vector<std::pair<std::string, std::string>> known;
    // The job's own first: a value in both is named after the card's variable.
    for (const auto& [name, value] : job_env) {
        add_known(name, value, seen, known);
    }
    const std::size_t from_job = known.size();
    for (const auto& [name, value] : environment) {
        add_known(name, value, seen, known);
    }
    for (std::size_t i = 0; i < known.size(); ++i) {
        auto& [name, value] = known[i];
        m_scrubber.add(value);
        // A secret-named variable of the session holding an absolute path (SSH_AUTH_SOCK,
        // XAUTHORITY, GOOGLE_APPLICATION_CREDENTIALS) says where a secret is, not what it is: a
        // render that shares a directory with it is not refused, though records still hide it.
        if (i < from_job || value.front() != '/') {
            m_known.push_back({std::move(name), std::move(value)});
        }
    }
}

std::string SecretValues::card_record(const WorkloadCard& card) const {
    std::vector<std::string> assignments;
    for (const char* path : {"launch.env", "Model-executor.communication_library.env"}) {
        const YAML::Node env = find_node(card.document().root(), path);
        if (!env.IsMap()) {
            continue;
        }
        for (const auto& entry : env) {
            if (entry.first.IsScalar() && entry.second.IsScalar() && is_secret_name(entry.first.Scalar()) &&
                entry.second.Scalar() != k_redacted && is_identifier(entry.first.Scalar())) {
                assignments.push_back(fmt::format("{}.{}='{}'", path, entry.first.Scalar(), k_redacted));
            }
        }
    }
    std::string emitted = card.document().emit();
    if (assignments.empty() && (m_scrubber.empty() || m_scrubber.scrub(emitted) == emitted)) {
        return emitted;
    }
    // Through the text, as reproduce reads the bundled card back, so both emit the same bytes.
    YamlDocument redacted = YamlDocument::parse(emitted, card.document().display_name());
    for (const std::string& assignment : assignments) {
        redacted.set(assignment);
    }
    scrub_scalars(redacted.root(), m_scrubber);
    return redacted.emit();
}

void SecretValues::refuse_in(const RenderedFile& file, const WorkloadCard& card) const {
    for (const Known& secret : m_known) {
        if (file.content.find(secret.value) == std::string::npos) {
            continue;
        }
        const YAML::Node args = find_node(card.document().root(), "launch.args");
        for (std::size_t i = 0; args.IsSequence() && i < args.size(); ++i) {
            if (args[i].IsScalar() && args[i].Scalar().find(secret.value) != std::string::npos) {
                const std::string field = fmt::format("launch.args[{}]", i);
                throw input_error(fmt::format(
                    "{}: {}: holds the value of {}, a secret; it would be written into {}, the run directory and the bundle. "
                    "Pass secrets through the environment only (launch.env.{} names it; the framework reads it from there)",
                    card.document().location(args[i], field), field, secret.name, file.name, secret.name));
            }
        }
        throw input_error(fmt::format("{}: the rendered {} holds the value of {}, a secret-named variable (of the card's env or "
                                      "of this environment); it would be written into the run directory and the bundle. A "
                                      "secret reaches the job through its environment only: take the value out of the card, or "
                                      "unset {} if it holds no secret",
                                      card.document().display_name(), file.name, secret.name, secret.name));
    }
}

} // namespace harness
