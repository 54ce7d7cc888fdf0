#include "run/record_provenance.hpp"

#include "run/container_provenance.hpp"

#include "provenance/secret_scrub.hpp"
#include "run/run_directory.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

#include <fmt/format.h>
#include <map>
#include <ostream>

namespace harness {

namespace {

std::string input_path(const fs::path& file, const fs::path& home) {
    std::error_code ec;
    const fs::path absolute = fs::weakly_canonical(fs::absolute(file, ec), ec);
    const fs::path base = fs::weakly_canonical(fs::absolute(home, ec), ec);
    const fs::path relative = absolute.lexically_relative(base);
    if (!relative.empty() && *relative.begin() != "..") {
        return relative.generic_string();
    }
    return absolute.generic_string();
}

Json hosts_of(const std::vector<ProbeReport>& probes) {
    // Probes come sorted by rank: a host's tools are those its lowest rank saw.
    std::map<std::string, Json> hosts;
    for (const ProbeReport& probe : probes) {
        Json& host = hosts[probe.hostname];
        if (host.is_null()) {
            host["hostname"] = probe.hostname;
            host["ranks"] = Json::array();
            host["tools"] = probe.tools;
        }
        host["ranks"].push_back(Json(probe.rank));
    }
    Json out = Json::array();
    for (auto& [name, host] : hosts) {
        out.push_back(std::move(host));
    }
    return out;
}

Json run_of(const RunRecord& record) {
    std::string started;
    for (const auto& [state, time] : record.transitions) {
        if (state == to_string(RunState::running)) {
            started = time;
            break;
        }
    }
    if (started.empty() && !record.transitions.empty()) {
        started = record.transitions.front().second;
    }
    Json run = Json::object();
    run["id"] = record.run_id;
    run["card"] = record.card;
    run["cluster"] = record.target;
    run["executor"] = record.executor;
    run["state"] = to_string(record.state);
    run["started"] = string_or_null(started);
    run["finished"] = is_final(record.state) && !record.transitions.empty() ? Json(record.transitions.back().second) : Json();
    return run;
}

void learn_secrets(const EnvironmentMap& env, SecretScrubber& scrubber) {
    for (const auto& [name, value] : env) {
        if (is_secret_name(name)) {
            scrubber.add(value);
        }
    }
}

} // namespace

ProvenanceFacts collect_provenance_facts(const RenderedRun& run, const fs::path& home) {
    ProvenanceFacts facts;
    try {
        facts.harness = describe_checkout(home);
    } catch (const std::exception& error) {
        facts.warnings.push_back(fmt::format("cannot read the harness checkout at {}: {}", home.string(), error.what()));
    }
    std::map<std::string, std::string> inputs;
    for (const fs::path& file : run.inputs) {
        inputs.emplace(input_path(file, home), sha256_file(file));
    }
    for (auto& [path, sha256] : inputs) {
        facts.inputs.push_back({path, sha256});
    }
    facts.harness_environment = process_environment();
    return facts;
}

Json make_provenance(const RenderedRun& run, const RunRecord& record, const ProvenanceFacts& facts,
                     const std::vector<ProbeReport>& probes) {
    const Plan& plan = run.plan;
    Json out = Json::object();
    out["format"] = k_provenance_format;

    Json harness = Json::object();
    harness["version"] = k_version;
    harness["commit"] = string_or_null(facts.harness.commit);
    harness["dirty"] = facts.harness.dirty;
    harness["patch"] = facts.harness.dirty ? Json(k_harness_patch_name) : Json();
    out["harness"] = std::move(harness);

    out["run"] = run_of(record);

    out["inputs"] = Json::array();
    for (const InputPin& input : facts.inputs) {
        out["inputs"].push_back(Json(Json::Object{{"path", input.path}, {"sha256", input.sha256}}));
    }

    out["sources"] = Json::array();
    if (!plan.source_repo.empty()) {
        out["sources"].push_back(
            Json(Json::Object{{"repo", plan.source_repo}, {"ref", plan.source_ref}, {"commit", string_or_null(plan.source_commit)}}));
    }

    std::vector<std::string> unused;
    out["container"] = container_provenance(plan, {}, unused);

    out["hosts"] = hosts_of(probes);
    out["environment"] = capture_environment(probes.empty() ? facts.harness_environment : probes.front().environment);

    Json scheduler = record.scheduler.is_object() ? record.scheduler : Json::object();
    scheduler["job_ids"] = json_string_array(record.job_ids);
    out["scheduler"] = std::move(scheduler);

    if (facts.reproduces) {
        out["reproduces"] = Json(
            Json::Object{{"bundle", facts.reproduces->bundle}, {"manifest_sha256", facts.reproduces->manifest_sha256}});
    }
    return out;
}

void record_provenance(const fs::path& run_dir, const RenderedRun& run, const RunRecord& record, const ProvenanceFacts& facts,
                       std::ostream& out) {
    std::vector<std::string> warnings = facts.warnings;
    // First, so that the raw environments are gone even if a later step fails.
    const std::vector<ProbeReport> probes = take_probe_reports(run_dir / "rendered" / "probe", warnings);

    // The logs were scrubbed as they were written; again here for what the job wrote itself
    // (Slurm's output files) and for a value learnt only now.
    SecretScrubber scrubber = facts.secrets;
    learn_secrets(facts.harness_environment, scrubber);
    // Today's probe writes no secret value; one from an older bundle's scripts may.
    for (const ProbeReport& probe : probes) {
        learn_secrets(probe.environment, scrubber);
    }
    std::size_t redacted = facts.redacted_while_running + scrubber.scrub_tree(run_dir / "logs") +
                           scrubber.scrub_tree(run_dir / "accounting");
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(run_dir / run_files::k_record, ec))) {
        redacted += scrubber.scrub_json_file(run_dir / run_files::k_record);
    }

    Json made = make_provenance(run, record, facts, probes);
    made["container"] = container_provenance(run.plan, run_dir, warnings);
    const Json provenance = scrubber.scrub_json(made);
    if (facts.harness.dirty) {
        write_file_atomic(run_dir / k_harness_patch_name, scrubber.scrub(facts.harness.patch));
    }
    write_file_atomic(run_dir / k_provenance_name, provenance.dump());

    for (const std::string& warning : warnings) {
        out << "  provenance: warning: " << warning << "\n";
    }
    if (probes.empty()) {
        out << "  provenance: warning: no host reported its tools (the launch script ran no ccl_probe.py)\n";
    }
    if (redacted > 0) {
        out << fmt::format("  provenance: {} occurrence(s) of secret values replaced by {}\n", redacted, k_redacted);
    }
}

} // namespace harness
