#include "render/render.hpp"

#include "image/base_spec.hpp"
#include "plan/container_plan.hpp"

#include "card/yaml_document.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "render/secret_values.hpp"
#include "render/render_context.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
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

/// The template directory of the plan's framework and target; an input error naming what exists
/// when there is none.
fs::path template_dir_for(const WorkloadCard& card, const ClusterProfile& cluster, const Plan& plan, const fs::path& home) {
    fs::path template_dir = home / "templates" / plan.framework / plan.target;
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
    return template_dir;
}

/// The rendered Containerfile, or nothing when the run has no container to describe; for
/// podman and podman-hpc it also names the image built from it (run.plan.container_build), and
/// a `ccl-base:<name>` image becomes the base the harness makes from containers/base/<name>.yaml.
std::optional<std::string> render_containerfile(const ClusterProfile& cluster, const fs::path& container, const fs::path& home,
                                                RenderedRun& run) {
    std::error_code ec;
    // Without an image there is no container spec to write (validate --strict insists on one).
    if (run.plan.container_runtime == "none" || run.plan.container_image.empty() || !fs::is_regular_file(container, ec)) {
        return std::nullopt;
    }
    Plan plan = run.plan;
    if (const std::optional<std::string> base = base_spec_name(plan.container_image)) {
        const BaseSpec spec = load_base_spec(home, *base);
        run.plan.container_base = base_tag(spec);
        plan.container_image = run.plan.container_base;
        run.inputs.push_back(spec.path);
    }
    std::string text = render_template(container, template_context(plan, cluster), "Containerfile");
    // The tag names the file's content, so a job reuses an image already built (and, for
    // podman-hpc, migrated) from the same file and rebuilds when it changes.
    if (plan.container_runtime == "podman-hpc" || plan.container_runtime == "podman") {
        run.plan.container_build = fmt::format("localhost/ccl-{}:{}", plan.framework, sha256_hex(text).substr(0, 16));
    }
    return text;
}

/// Renders every file of the template directory (copying those that are no template) and the
/// partials they use, into run.files and run.inputs.
void render_template_dir(const ClusterProfile& cluster, const fs::path& template_dir, const fs::path& home, RenderedRun& run) {
    const Partials partials = load_partials(home);
    std::set<std::string> used_partials;
    const mustache::data ctx = with_partials(template_context(run.plan, cluster), partials);
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
}

/// Copies launch.script beside the card into the run, or checks the path it has inside
/// launch.source, which exists only once the launch script has fetched it.
void add_card_script(const WorkloadCard& card, const Plan& plan, RenderedRun& run) {
    std::error_code ec;
    if (!plan.script.empty() && !plan.source_repo.empty()) {
        // With launch.source the script is a path inside the checkout: nothing to copy, only a
        // path to keep inside it.
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
}

/// Sorts run.files by name; two files of one name (a template and the card's script) are an error.
void sort_by_name(const fs::path& template_dir, RenderedRun& run) {
    std::sort(run.files.begin(), run.files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < run.files.size(); ++i) {
        if (run.files[i].name == run.files[i - 1].name) {
            throw HarnessError(fmt::format("{}: two rendered files are named {}", template_dir.string(), enquote(run.files[i].name)));
        }
    }
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
    const fs::path template_dir = template_dir_for(card, cluster, plan, home);
    RenderedRun run;
    run.plan = plan;
    const fs::path container = home / "containers" / (plan.framework + ".Containerfile.mustache");
    const std::optional<std::string> containerfile = render_containerfile(cluster, container, home, run);
    render_template_dir(cluster, template_dir, home, run);
    if (containerfile) {
        run.files.push_back({"Containerfile", *containerfile, false});
        run.inputs.push_back(container);
    }
    add_card_script(card, plan, run);
    // Launch scripts run it on every host to record versions and environment for provenance.
    const fs::path probe = home / "templates" / "common" / "ccl_probe.py";
    run.files.push_back({"ccl_probe.py", with_capture_rules(read_file(probe), probe), false});
    run.inputs.push_back(probe);
    // The common helpers a launch script runs, shipped where one does: the in-job preflight, and the
    // writer of a Hub text dataset as the JSONL a framework reads.
    for (const char* helper : {"ccl_preflight.py", "ccl_text_dataset.py"}) {
        const bool used = std::any_of(run.files.begin(), run.files.end(),
                                      [&](const auto& file) { return file.content.find(helper) != std::string::npos; });
        if (used) {
            const fs::path source = home / "templates" / "common" / helper;
            run.files.push_back({helper, read_file(source), false});
            run.inputs.push_back(source);
        }
    }
    run.inputs.push_back(cluster.source);
    run.files.push_back({"env.sh", env_file(plan), false});
    // Secret-named variables are redacted by name above; their values are kept out of every
    // other field too: replaced in the records, refused where the job would read the placeholder.
    const SecretValues secrets(plan.env, process_environment());
    for (const RenderedFile& file : run.files) {
        secrets.refuse_in(file, card);
    }
    run.files.push_back({"card.yaml", secrets.card_record(card), false});
    run.files.push_back({k_marker, secrets.scrubber().scrub_json(plan_to_json(without_secret_values(run.plan))).dump(), false});
    sort_by_name(template_dir, run);
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
