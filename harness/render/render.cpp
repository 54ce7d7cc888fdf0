#include "render/render.hpp"

#include "card/yaml_document.hpp"
#include "plan/container_plan.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <kainjow/mustache.hpp>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <unistd.h>

namespace harness {

namespace mustache = kainjow::mustache;

namespace {

constexpr const char* k_template_suffix = ".mustache";
constexpr const char* k_marker = "plan.json";

mustache::data text(const std::string& value) { return mustache::data(value); }
mustache::data number(long long value) { return mustache::data(std::to_string(value)); }
mustache::data flag(bool value) { return mustache::data(value); }

mustache::data list_of(const std::string& key, const std::vector<std::string>& values) {
    mustache::data list(mustache::data::type::list);
    for (const auto& value : values) {
        list.push_back(mustache::data(key, mustache::data(value)));
    }
    return list;
}

/// An `#SBATCH` line is read by sbatch, not by a shell, so it cannot be quoted: every value in
/// one must be a plain token (plus '&' for constraints like gpu&hbm80g).
std::string directive(const std::string& option, const std::string& value, const std::string& field) {
    const bool ok = !value.empty() && value[0] != '-' &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c == '&' || is_safe_token(std::string(1, c)); });
    if (!ok) {
        throw input_error(
            fmt::format("{}: {} cannot go on an #SBATCH line (letters, digits and _@%+=:,./-& only)", field, enquote(value)));
    }
    return option + value;
}

std::vector<std::string> sbatch_directives(const Plan& plan, const ClusterProfile& cluster) {
    std::string job_name;
    for (const char c : plan.card_name) {
        job_name += is_safe_token(std::string(1, c)) ? c : '_';
    }
    std::vector<std::string> out;
    out.push_back(directive("--job-name=", job_name.substr(0, 64), "card name"));
    if (!plan.account.empty()) {
        out.push_back(directive("--account=", plan.account, "launch.account"));
    }
    if (!plan.qos.empty()) {
        out.push_back(directive("--qos=", plan.qos, "launch.qos"));
    }
    if (!plan.partition.empty()) {
        out.push_back(directive("--partition=", plan.partition, "launch.partition"));
    }
    if (!plan.constraint.empty()) {
        out.push_back(directive("--constraint=", plan.constraint, "launch.constraint"));
    }
    out.push_back(directive("--time=", plan.time_limit, "launch.time_limit"));
    out.push_back(directive("--nodes=", std::to_string(plan.nodes), "nodes"));
    out.push_back(directive("--ntasks-per-node=", std::to_string(plan.tasks_per_node), "tasks per node"));
    if (cluster.gpus_per_node_flag) {
        out.push_back(directive("--gpus-per-node=", std::to_string(cluster.accelerators_per_node), "gpus per node"));
    }
    if (plan.cpus_per_task > 0) {
        out.push_back(directive("--cpus-per-task=", std::to_string(plan.cpus_per_task), "cpus per task"));
    }
    // Shifter looks the image up as TYPE:TAG at submission; a digest is refused there (and by
    // validate --strict first, docs/containers.md), not dropped here.
    const std::string shifter_image = shifter_image_for(plan.container_image);
    if (plan.container_runtime == "shifter" && !shifter_image.empty()) {
        out.push_back(directive("--image=", shifter_image, "launch.container.image"));
        out.push_back(directive("--module=", plan.nccl_plugin.empty() ? "gpu" : plan.nccl_plugin, "NCCL plugin"));
    }
    out.emplace_back("--output=logs/%x-%j.out");
    return out;
}

mustache::data make_context(const Plan& plan, const ClusterProfile& cluster) {
    mustache::data ctx;
    ctx.set("card_name", text(plan.card_name));
    ctx.set("framework", text(plan.framework));
    ctx.set("target", text(plan.target));
    ctx.set("phase", text(plan.phase));
    ctx.set("training", flag(plan.phase == "training"));
    ctx.set("inference", flag(plan.phase != "training"));
    ctx.set("model", text(plan.model));
    ctx.set("model_family", text(plan.model_family));
    ctx.set("precision", text(plan.precision));
    ctx.set("nodes", number(plan.nodes));
    ctx.set("multi_node", flag(plan.nodes > 1));
    ctx.set("ranks_per_node", number(plan.ranks_per_node));
    ctx.set("world_size", number(plan.world_size));
    ctx.set("tasks_per_node", number(plan.tasks_per_node));
    ctx.set("accelerators_per_node", number(cluster.accelerators_per_node));
    const Parallelism& p = plan.parallelism;
    ctx.set("tp", number(p.tp));
    ctx.set("pp", number(p.pp));
    ctx.set("cp", number(p.cp));
    ctx.set("dp_replicate", number(p.dp_replicate));
    ctx.set("dp_shard", number(p.dp_shard));
    ctx.set("dp", number(p.dp_replicate * p.dp_shard));
    ctx.set("ep", number(p.ep));
    ctx.set("pp_mb", number(p.pp_mb));
    ctx.set("expert_parallel", flag(p.ep > 1));
    ctx.set("steps", number(plan.steps));
    ctx.set("profile_wait", number(plan.profile.wait));
    ctx.set("profile_warmup", number(plan.profile.warmup));
    ctx.set("profile_active", number(plan.profile.active));
    ctx.set("profile_start", number(plan.profile.wait + plan.profile.warmup));
    ctx.set("profile_end", number(plan.profile.wait + plan.profile.warmup + plan.profile.active));
    ctx.set("trace_torch", flag(plan.traces("torch_profiler")));
    ctx.set("trace_nsys", flag(plan.traces("nsys")));
    ctx.set("trace_xplane", flag(plan.traces("xplane")));
    ctx.set("batch_size", number(plan.batch_size));
    ctx.set("micro_batch_size", number(plan.micro_batch_size));
    ctx.set("seq_len", number(plan.seq_len));
    ctx.set("input_len", number(plan.input_len));
    ctx.set("output_len", number(plan.output_len));
    ctx.set("account", text(plan.account));
    ctx.set("qos", text(plan.qos));
    ctx.set("time_limit", text(plan.time_limit));
    ctx.set("constraint", text(plan.constraint));
    ctx.set("container_image", text(plan.container_image));
    ctx.set("container_runtime", text(plan.container_runtime));
    ctx.set("runtime_shifter", flag(plan.container_runtime == "shifter"));
    ctx.set("runtime_podman", flag(plan.container_runtime == "podman-hpc"));
    ctx.set("runtime_docker", flag(plan.container_runtime == "docker"));
    ctx.set("runtime_none", flag(plan.container_runtime == "none"));
    ctx.set("container_build", text(plan.container_build));
    ctx.set("has_container_build", flag(!plan.container_build.empty()));
    ctx.set("has_container_image", flag(!plan.container_image.empty()));
    ctx.set("shifter_image", text(shifter_image_for(plan.container_image)));
    ctx.set("nccl_plugin", text(plan.nccl_plugin));
    ctx.set("podman_nccl", flag(plan.container_runtime == "podman-hpc" && !plan.nccl_plugin.empty()));
    ctx.set("cpus_per_task", number(plan.cpus_per_task));
    ctx.set("has_cpus_per_task", flag(plan.cpus_per_task > 0));
    ctx.set("has_source", flag(!plan.source_repo.empty()));
    ctx.set("source_repo", text(plan.source_repo));
    ctx.set("source_ref", text(plan.source_ref));
    ctx.set("source_commit", text(plan.source_commit));
    // What scripts check out: the pinned SHA when there is one; an unpinned preview shows the ref.
    ctx.set("source_checkout", text(plan.source_commit.empty() ? plan.source_ref : plan.source_commit));
    ctx.set("script", text(plan.script));
    ctx.set("extra_args", list_of("arg", plan.extra_args));
    ctx.set("has_extra_args", flag(!plan.extra_args.empty()));
    ctx.set("modules", list_of("module", plan.modules));
    ctx.set("hf_home", text(plan.hf_home));
    ctx.set("python", text(plan.python));
    ctx.set("slurm_conf", text(plan.slurm_conf));
    ctx.set("env_file", text("env.sh"));
    if (plan.scheduler == Scheduler::slurm) {
        ctx.set("sbatch_directives", list_of("directive", sbatch_directives(plan, cluster)));
    }
    ctx.set("tpu_accelerator_type", text(plan.tpu_accelerator_type));
    ctx.set("tpu_topology", text(plan.tpu_topology));
    ctx.set("tpu_hosts", number(plan.tpu_hosts));
    ctx.set("tpu_chips_per_host", number(plan.tpu_chips_per_host));
    ctx.set("tpu_machine_type", text(plan.tpu_machine_type));
    ctx.set("tpu_gke_hosts", number(plan.tpu_gke_hosts));
    ctx.set("tpu_gke_chips_per_host", number(plan.tpu_gke_chips_per_host));
    ctx.set("tpu_project", text(plan.tpu_project));
    ctx.set("tpu_zone", text(plan.tpu_zone));
    ctx.set("tpu_name", text(plan.tpu_name));
    ctx.set("tpu_runtime_version", text(plan.tpu_runtime_version));
    ctx.set("tpu_spot", flag(plan.tpu_spot));
    std::string libtpu;
    for (const auto& [key, value] : plan.env) {
        if (key == "LIBTPU_INIT_ARGS") {
            libtpu = value;
        }
    }
    ctx.set("libtpu_init_args", text(libtpu));
    mustache::data framework_config;
    for (const auto& [key, value] : plan.framework_config) {
        framework_config.set(key, value == "true" ? flag(true) : value == "false" ? flag(false) : text(value));
    }
    ctx.set("fw", framework_config);
    mustache::data env(mustache::data::type::list);
    for (const auto& [key, value] : plan.env) {
        mustache::data entry;
        entry.set("key", text(key));
        // A secret's name is needed (a container runtime passes it through by name), never its value.
        entry.set("value", text(is_secret_name(key) ? std::string(k_redacted) : value));
        env.push_back(entry);
    }
    ctx.set("env", env);
    return ctx;
}

/// Only pre-validated directives may bypass the escaper.
void check_raw_tags(const std::string& text, const fs::path& file) {
    static const std::regex raw(R"(\{\{\{\s*([^}\s]+)\s*\}\}\}|\{\{&\s*([^}\s]+)\s*\}\})");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), raw); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
        if (name != "directive") {
            throw HarnessError(
                fmt::format("{}: unescaped tag {{{{{{{}}}}}}}: only sbatch directives may skip quoting", file.string(), name));
        }
    }
}

std::vector<fs::path> sorted_files(const fs::path& dir);

/// Partials (`{{> name}}`) are templates/common/NAME.mustache, so a block shared by several
/// templates is written once; they go through the same escaper as the template that includes them.
struct Partials {
    std::map<std::string, std::string> text; ///< name -> template source
    std::vector<fs::path> files;
};

Partials load_partials(const fs::path& home) {
    Partials out;
    const fs::path dir = home / "templates" / "common";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        return out;
    }
    for (const auto& file : sorted_files(dir)) {
        const std::string name = file.filename().string();
        if (ends_with(name, k_template_suffix)) {
            const std::string source = read_file(file);
            check_raw_tags(source, file);
            out.text[name.substr(0, name.size() - std::string(k_template_suffix).size())] = source;
            out.files.push_back(file);
        }
    }
    return out;
}

/// kainjow renders an unknown partial as nothing; a misspelt one must be an error instead.
void check_partials(const std::string& source, const fs::path& file, const Partials& partials, std::set<std::string>& used) {
    static const std::regex partial(R"(\{\{>\s*([^}\s]+)\s*\}\})");
    for (auto it = std::sregex_iterator(source.begin(), source.end(), partial); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].str();
        if (partials.text.count(name) == 0) {
            throw HarnessError(fmt::format("{}: no partial {} (templates/common/{}.mustache)", file.string(), enquote(name), name));
        }
        if (used.insert(name).second) {
            check_partials(partials.text.at(name), file, partials, used);
        }
    }
}

mustache::data with_partials(mustache::data ctx, const Partials& partials) {
    for (const auto& [name, source] : partials.text) {
        const std::string copy = source;
        ctx.set(name, mustache::data(mustache::partial([copy] { return std::string(copy); })));
    }
    return ctx;
}

std::string render_template(const fs::path& file, const mustache::data& ctx, const std::string& output_name) {
    const std::string source = read_file(file);
    check_raw_tags(source, file);
    mustache::mustache tmpl(source);
    if (!tmpl.is_valid()) {
        throw HarnessError(fmt::format("{}: invalid template: {}", file.string(), tmpl.error_message()));
    }
    const std::string kind = escaper_for(output_name);
    std::optional<std::string> unsafe;
    tmpl.set_custom_escape([&](const std::string& value) -> std::string {
        if (kind == "shell") {
            return shell_quote(value);
        }
        if (kind == "toml") {
            return toml_scalar(value);
        }
        if (kind == "json") {
            return json_scalar(value);
        }
        if (!is_safe_token(value)) {
            unsafe = value; // empty values too: `FROM ` is as broken as `FROM a b`
            return {};
        }
        return value;
    });
    std::string out = tmpl.render(ctx);
    if (!tmpl.is_valid()) {
        throw HarnessError(fmt::format("{}: cannot render: {}", file.string(), tmpl.error_message()));
    }
    if (unsafe) {
        throw input_error(fmt::format("{}: value {} cannot be written safely into {}", file.string(), enquote(*unsafe), output_name));
    }
    return out;
}

std::string env_file(const Plan& plan) {
    std::string out = fmt::format("# shellcheck shell=bash\n# Environment for {} on {}, written by ccl-harness render.\n",
                                  plan.card_name, plan.target);
    for (const auto& [key, value] : plan.env) {
        if (!is_identifier(key)) {
            throw input_error(fmt::format("environment variable name {} is not a valid identifier", enquote(key)));
        }
        if (is_secret_name(key)) {
            // The executor hands the value to the job (local ranks' environment, sbatch's
            // exported environment): this file, bundled and shown by compare, names it only.
            out += fmt::format("# {0} is a secret: ccl-harness hands it to the job; export it to run this by hand\n"
                               "export {0}=\"${{{0}?{0} is a secret this file does not hold: export it}}\"\n",
                               key);
            continue;
        }
        out += fmt::format("export {}={}\n", key, shell_quote(value));
    }
    return out;
}

/// ccl_probe.py with env_capture's rules written in, so it never writes a raw environment.
std::string with_capture_rules(std::string probe, const fs::path& file) {
    constexpr std::string_view k_empty_rules = "CAPTURED_PREFIXES = ()\nSECRET_WORDS = ()\n";
    const std::size_t at = probe.find(k_empty_rules);
    if (at == std::string::npos) {
        throw HarnessError(fmt::format("{}: no empty CAPTURED_PREFIXES and SECRET_WORDS lines to fill", file.string()));
    }
    return probe.replace(at, k_empty_rules.size(), probe_capture_rules());
}

/// The plan with every secret-named env value replaced by [REDACTED], for plan.json.
Plan without_secret_values(const Plan& plan) {
    Plan out = plan;
    for (auto& [key, value] : out.env) {
        if (is_secret_name(key)) {
            value = k_redacted;
        }
    }
    return out;
}

/// The card as rendered into the run directory (and from there into the bundle's scripts/):
/// secret-named entries of launch.env and of the communication library's env read [REDACTED].
std::string card_without_secret_values(const WorkloadCard& card) {
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
    if (assignments.empty()) {
        return card.document().emit();
    }
    // Through the text, as reproduce reads the bundled card back, so both emit the same bytes.
    YamlDocument redacted = YamlDocument::parse(card.document().emit(), card.document().display_name());
    for (const std::string& assignment : assignments) {
        redacted.set(assignment);
    }
    return redacted.emit();
}

std::vector<fs::path> sorted_files(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.is_regular_file()) {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

std::string escaper_for(const std::string& file_name) {
    if (ends_with(file_name, ".sh") || ends_with(file_name, ".sbatch") || ends_with(file_name, ".bash") ||
        ends_with(file_name, ".env")) {
        return "shell";
    }
    if (ends_with(file_name, ".toml")) {
        return "toml";
    }
    if (ends_with(file_name, ".yaml") || ends_with(file_name, ".yml") || ends_with(file_name, ".json")) {
        return "json";
    }
    return "token";
}

const RenderedFile* RenderedRun::find(const std::string& name) const {
    for (const auto& file : files) {
        if (file.name == name) {
            return &file;
        }
    }
    return nullptr;
}

std::vector<std::string> available_templates(const fs::path& home) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& framework : fs::directory_iterator(home / "templates", ec)) {
        if (!framework.is_directory()) {
            continue;
        }
        for (const auto& target : fs::directory_iterator(framework.path(), ec)) {
            if (target.is_directory()) {
                out.push_back(framework.path().filename().string() + "/" + target.path().filename().string());
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

RenderedRun render_run(const WorkloadCard& card, const ClusterProfile& cluster, const Plan& plan, const fs::path& home) {
    const fs::path template_dir = home / "templates" / plan.framework / plan.target;
    std::error_code ec;
    if (plan.framework.empty() || !fs::is_directory(template_dir, ec)) {
        // A profile of the user's own, named after their site, renders with a shipped target's
        // templates only when it says which (`templates:`); say so rather than leave them guessing.
        const bool own_profile = cluster.templates == cluster.name && !is_inside(cluster.source, home / "clusters");
        throw input_error(fmt::format("{}: no template for framework {} on target {}; templates exist for: {}{}",
                                      card.document().display_name(), enquote(plan.framework.empty() ? "(none)" : plan.framework),
                                      enquote(plan.target), join(available_templates(home), ", "),
                                      own_profile ? fmt::format("\n  {}: add `templates: TARGET` (e.g. local, perlmutter) to "
                                                                "render with a shipped target's templates",
                                                                cluster.source.string())
                                                  : std::string()));
    }
    RenderedRun run;
    run.plan = plan;
    const fs::path container = home / "containers" / (plan.framework + ".Containerfile.mustache");
    // Without an image there is no container spec to write (validate --strict insists on one).
    const bool containerfile = plan.container_runtime != "none" && !plan.container_image.empty() && fs::is_regular_file(container, ec);
    std::string containerfile_text;
    if (containerfile) {
        containerfile_text = render_template(container, make_context(run.plan, cluster), "Containerfile");
        // podman-hpc builds the rendered Containerfile; the tag names its content, so a job reuses
        // an image already built and migrated from the same file and rebuilds when it changes.
        if (plan.container_runtime == "podman-hpc") {
            run.plan.container_build = fmt::format("localhost/ccl-{}:{}", plan.framework,
                                                   sha256_hex(containerfile_text).substr(0, 16));
        }
    }
    const Partials partials = load_partials(home);
    std::set<std::string> used_partials;
    const mustache::data ctx = with_partials(make_context(run.plan, cluster), partials);
    for (const auto& file : sorted_files(template_dir)) {
        std::string name = file.filename().string();
        RenderedFile out;
        if (ends_with(name, k_template_suffix)) {
            name = name.substr(0, name.size() - std::string(k_template_suffix).size());
            check_partials(read_file(file), file, partials, used_partials);
            out.content = render_template(file, ctx, name);
        } else {
            out.content = read_file(file);
        }
        out.name = name;
        out.executable = ends_with(name, ".sh") || ends_with(name, ".sbatch");
        if (starts_with(name, "launch.")) {
            run.launch_script = name;
        }
        run.inputs.push_back(file);
        run.files.push_back(std::move(out));
    }
    if (run.launch_script.empty()) {
        throw HarnessError(fmt::format("{}: no launch.* template", template_dir.string()));
    }
    for (const auto& file : partials.files) {
        const std::string stem = file.filename().string();
        if (used_partials.count(stem.substr(0, stem.size() - std::string(k_template_suffix).size())) != 0) {
            run.inputs.push_back(file);
        }
    }
    if (containerfile) {
        run.files.push_back({"Containerfile", containerfile_text, false});
        run.inputs.push_back(container);
    }
    if (!plan.script.empty() && !plan.source_repo.empty()) {
        // With launch.source the script is a path inside the checkout, which exists only once
        // the launch script has fetched it: nothing to copy, only a path to keep inside it.
        if (const std::string why = relative_name_problem(plan.script); !why.empty()) {
            throw input_error(fmt::format("{}: launch.script {}: must be a relative path inside launch.source ({})",
                                          card.document().display_name(), enquote(plan.script), why));
        }
    } else if (!plan.script.empty()) {
        const fs::path script = card.document().path().parent_path() / plan.script;
        if (const std::string why = relative_name_problem(plan.script); !why.empty()) {
            throw input_error(fmt::format("{}: launch.script {}: must be a relative path beside the card ({})",
                                          card.document().display_name(), enquote(plan.script), why));
        }
        if (!fs::is_regular_file(script, ec)) {
            throw input_error(fmt::format("{}: launch.script {}: no such file beside the card", card.document().display_name(),
                                          enquote(plan.script)));
        }
        run.files.push_back({fs::path(plan.script).filename().string(), read_file(script), false});
        run.inputs.push_back(script);
    }
    // Launch scripts run it on every host to record versions and environment for provenance.
    const fs::path probe = home / "templates" / "common" / "ccl_probe.py";
    run.files.push_back({"ccl_probe.py", with_capture_rules(read_file(probe), probe), false});
    run.inputs.push_back(probe);
    run.inputs.push_back(cluster.source);
    run.files.push_back({"env.sh", env_file(plan), false});
    run.files.push_back({"card.yaml", card_without_secret_values(card), false});
    run.files.push_back({k_marker, plan_to_json(without_secret_values(run.plan)).dump(), false});
    std::sort(run.files.begin(), run.files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < run.files.size(); ++i) {
        if (run.files[i].name == run.files[i - 1].name) {
            throw HarnessError(fmt::format("{}: two rendered files are named {}", template_dir.string(), enquote(run.files[i].name)));
        }
    }
    return run;
}

void write_rendered(const RenderedRun& run, const fs::path& out_argument) {
    // "DIR/" names DIR: without this the staging directory would be made inside DIR itself.
    fs::path out_dir = absolute_path(out_argument).lexically_normal();
    if (!out_dir.has_filename()) {
        out_dir = out_dir.parent_path();
    }
    if (!out_dir.has_filename() || out_dir.filename() == "." || out_dir.filename() == "..") {
        throw input_error(fmt::format("--out {}: not a directory a render can replace", out_argument.string()));
    }
    std::error_code ec;
    const bool exists = fs::exists(fs::symlink_status(out_dir, ec));
    if (exists) {
        if (!fs::is_directory(fs::symlink_status(out_dir, ec))) {
            throw input_error(fmt::format("--out {}: exists and is not a directory", out_argument.string()));
        }
        if (!fs::is_empty(out_dir, ec) && !fs::is_regular_file(out_dir / k_marker, ec)) {
            throw input_error(fmt::format("--out {}: not empty and not an earlier render (no {}); refusing to replace it",
                                          out_argument.string(), k_marker));
        }
    }
    const fs::path parent = out_dir.parent_path();
    fs::create_directories(parent, ec);
    if (ec) {
        throw input_error(fmt::format("--out {}: cannot create {}: {}", out_argument.string(), parent.string(), ec.message()));
    }
    // Build the whole render beside the target, then swap it in: a failure part-way leaves
    // the old render untouched.
    std::string staging = (parent / ("." + out_dir.filename().string() + ".render-XXXXXX")).string();
    if (::mkdtemp(staging.data()) == nullptr) {
        throw input_error(
            fmt::format("--out {}: cannot write in {}: {}", out_argument.string(), parent.string(), std::strerror(errno)));
    }
    try {
        fs::permissions(staging, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
        fs::create_directories(fs::path(staging) / "logs");
        for (const auto& file : run.files) {
            write_file_atomic(fs::path(staging) / file.name, file.content, file.executable);
        }
        // One atomic step whoever else renders into the same --out: the new render moves in
        // where nothing is (RENAME_NOREPLACE), or trades places with the render there
        // (RENAME_EXCHANGE), which is then removed. Concurrent renders each swap in a complete
        // render; the last one stays, and no reader ever sees a half-written or missing one.
        if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_NOREPLACE) != 0) {
            if (errno != EEXIST || ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_EXCHANGE) != 0) {
                throw input_error(
                    fmt::format("--out {}: cannot move the render into place: {}", out_argument.string(), std::strerror(errno)));
            }
            fs::remove_all(staging, ec); // now the render it replaced
        }
    } catch (const fs::filesystem_error& error) {
        fs::remove_all(staging, ec);
        throw input_error(fmt::format("--out {}: cannot write the render: {}", out_argument.string(), error.code().message()));
    } catch (...) {
        fs::remove_all(staging, ec);
        throw;
    }
}

} // namespace harness
