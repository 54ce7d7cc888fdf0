#include "image/image_build.hpp"

#include "image/base_image.hpp"
#include "image/base_spec.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <sstream>

namespace harness {

namespace {

constexpr std::size_t k_hex64 = 64;
constexpr std::size_t k_max_tag_bytes = 255;
constexpr std::size_t k_max_containerfile_bytes = std::size_t{1024} * 1024;

bool is_hex64(std::string_view text) {
    return text.size() == k_hex64 &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// A Debian package name: what dpkg accepts (policy 5.6.1), so a line of anything else that a
/// runtime wrote beside dpkg-query's answer (a warning) is never taken for a package.
bool is_package_name(std::string_view name) {
    if (name.size() < 2 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'))) {
        return false;
    }
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'; });
}

/// "name=version" lines, sorted and de-duplicated, each with a newline; other lines dropped.
std::string package_lines(const std::string& output) {
    std::vector<std::string> lines;
    for (const auto& raw : split(output, '\n')) {
        const std::string line = trim(raw);
        const std::size_t eq = line.find('=');
        if (eq == std::string::npos || eq + 1 == line.size() || !is_package_name(line.substr(0, eq)) ||
            line.find_first_of(" \t") != std::string::npos) {
            continue;
        }
        lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    std::string text;
    for (const auto& line : lines) {
        text += line + "\n";
    }
    return text;
}

std::map<std::string, std::string> package_map(const std::string& list) {
    std::map<std::string, std::string> out;
    for (const auto& line : split(list, '\n')) {
        const std::size_t eq = line.find('=');
        if (eq != std::string::npos) {
            out[line.substr(0, eq)] = line.substr(eq + 1);
        }
    }
    return out;
}

std::string to_upper(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return text;
}

/// Every FROM of a Containerfile: (reference, line). Continuation lines are joined first.
std::vector<std::pair<std::string, int>> from_lines(const std::string& text) {
    std::vector<std::pair<std::string, int>> out;
    std::string logical;
    int logical_line = 0;
    int line_number = 0;
    std::istringstream in(text);
    std::string raw;
    while (std::getline(in, raw)) {
        ++line_number;
        std::string line = trim(raw);
        if (logical.empty()) {
            if (line.empty() || line.front() == '#') {
                continue;
            }
            logical_line = line_number;
        } else if (!line.empty() && line.front() == '#') {
            continue; // comments inside a continued instruction are dropped by the builder too
        }
        if (!line.empty() && line.back() == '\\') {
            logical += line.substr(0, line.size() - 1) + " ";
            continue;
        }
        logical += line;
        std::istringstream words(logical);
        std::string instruction;
        words >> instruction;
        if (to_upper(instruction) == "FROM") {
            // FROM [--platform=...] IMAGE [AS NAME]: the first word that is not an option.
            std::string word;
            bool found = false;
            while (!found && words >> word) {
                found = !starts_with(word, "--");
            }
            if (found) {
                out.emplace_back(word, logical_line);
            }
        }
        logical.clear();
    }
    return out;
}

const Json& member(const Json& json, const std::string& key, const std::string& where) {
    const Json* value = json.find(key);
    if (value == nullptr) {
        throw input_error(fmt::format("{}: image.{}: missing", where, key));
    }
    return *value;
}

std::string string_member(const Json& json, const std::string& key, const std::string& where) {
    const Json& value = member(json, key, where);
    if (!value.is_string()) {
        throw input_error(fmt::format("{}: image.{}: expected a string", where, key));
    }
    return value.as_string();
}

bool bool_member(const Json& json, const std::string& key, const std::string& where) {
    const Json& value = member(json, key, where);
    if (!value.is_bool()) {
        throw input_error(fmt::format("{}: image.{}: expected true or false", where, key));
    }
    return value.as_bool();
}

std::string hex_member(const Json& json, const std::string& key, const std::string& where, bool may_be_empty) {
    std::string value = string_member(json, key, where);
    if (!(may_be_empty && value.empty()) && !is_hex64(value)) {
        throw input_error(fmt::format("{}: image.{}: expected 64 lower-case hex digits, got {}", where, key, enquote(value)));
    }
    return value;
}

} // namespace

std::string image_tag_problem(const std::string& tag) {
    if (tag.empty()) {
        return "empty";
    }
    if (tag.size() > k_max_tag_bytes) {
        return fmt::format("longer than {} bytes", k_max_tag_bytes);
    }
    if (tag.front() == '-') {
        return "starts with '-' (it would read as an option)";
    }
    const bool clean = std::all_of(tag.begin(), tag.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
               c == '/' || c == ':' || c == '@';
    });
    if (!clean) {
        return "only letters, digits, '.', '_', '-', '/', ':' and '@' make an image name";
    }
    return "";
}

std::pair<std::string, int> containerfile_base(const std::string& text, const std::string& display_name) {
    const auto froms = from_lines(text);
    if (froms.empty()) {
        throw input_error(fmt::format("{}: no FROM line: a Containerfile must name its base image", display_name));
    }
    return froms.front();
}

namespace {

/// The Containerfile's text, checked for size; an input error when there is none.
std::string read_containerfile(const fs::path& containerfile) {
    std::error_code ec;
    if (!fs::is_regular_file(containerfile, ec)) {
        throw input_error(fmt::format("{}: no Containerfile there (render a card with launch.container first)",
                                      containerfile.parent_path().string()));
    }
    if (fs::file_size(containerfile, ec) > k_max_containerfile_bytes) {
        throw input_error(fmt::format("{}: larger than {} bytes", containerfile.string(), k_max_containerfile_bytes));
    }
    return read_file(containerfile);
}

/// The specs of every ccl-base FROM, each checked against the tag render wrote, before anything
/// is built, so a stale one costs nothing.
std::vector<BaseSpec> base_specs(const std::vector<std::pair<std::string, int>>& froms, const fs::path& containerfile,
                                 const ImageContext& context) {
    std::vector<BaseSpec> bases;
    for (const auto& [from, line] : froms) {
        const std::optional<std::string> name = base_name_of_tag(from);
        if (!name) {
            if (starts_with(from, k_base_tag_prefix)) {
                throw input_error(fmt::format("{}:{}: FROM {}: not a base tag (expected {}NAME:<16 hex>, as render writes it)",
                                              containerfile.string(), line, from, k_base_tag_prefix));
            }
            continue;
        }
        BaseSpec spec = load_base_spec(context.home, *name);
        const std::string current = base_tag(spec);
        if (current != from) {
            throw input_error(fmt::format("{}:{}: FROM {}: containers/base/{}.yaml changed since this Containerfile was rendered "
                                          "(it now makes {}); render the card again",
                                          containerfile.string(), line, from, *name, current));
        }
        bases.push_back(std::move(spec));
    }
    return bases;
}

/// Runs the runtime with `args`; a failure is a HarnessError naming `what` with its last lines.
ExitStatus run_or_throw(const ImageContext& context, const std::string& tag, const std::string& what, std::vector<std::string> args) {
    args.insert(args.begin(), context.runtime);
    ExitStatus status = context.runner.run({std::move(args), current_environment(), {}});
    throw_if_interrupted();
    if (!status.ok()) {
        throw HarnessError(fmt::format("image {}: {} {} failed ({}):\n{}", tag, context.runtime, what, status.describe(),
                                       output_tail(status.output)));
    }
    return status;
}

/// A base the runtime pulled: its id when the runtime can say (an ARG in FROM cannot); "".
std::string pulled_base_id(const std::string& base, const ImageContext& context) {
    const ExitStatus status = context.runner.run(
        {{context.runtime, "image", "inspect", "--format", "{{.Id}}", base}, current_environment(), {}});
    throw_if_interrupted();
    std::string id = trim(status.output);
    if (starts_with(id, "sha256:")) {
        id = id.substr(7);
    }
    return status.ok() && is_hex64(id) ? id : "";
}

/// The software inside, from dpkg's own database: what reproduce compares.
std::string image_packages(const std::string& tag, const ImageContext& context) {
    const ExitStatus listed = context.runner.run({{context.runtime, "run", "--rm", "--network", "none", "--entrypoint=", tag,
                                                   "dpkg-query", "-W", "-f", "${Package}=${Version}\\n"},
                                                  current_environment(),
                                                  {}});
    throw_if_interrupted();
    std::string packages = package_lines(listed.output);
    if (!listed.ok() || packages.empty()) {
        throw HarnessError(fmt::format("image {}: cannot list its Debian packages with dpkg-query ({}):\n{}", tag,
                                       listed.ok() ? "no packages in its answer" : listed.describe(), output_tail(listed.output)));
    }
    return packages;
}

} // namespace

ImageRecord build_image(const fs::path& rendered_dir, const std::string& tag, const ImageContext& context) {
    if (const std::string problem = image_tag_problem(tag); !problem.empty()) {
        throw input_error(fmt::format("image tag {}: {}", enquote(tag), problem));
    }
    const fs::path containerfile = rendered_dir / "Containerfile";
    const std::string text = read_containerfile(containerfile);
    ImageRecord record;
    record.tag = tag;
    record.containerfile_sha256 = sha256_hex(text);
    const auto froms = from_lines(text);
    if (froms.empty()) {
        throw input_error(fmt::format("{}: no FROM line: a Containerfile must name its base image", containerfile.string()));
    }
    record.base_tag = froms.front().first;
    for (const auto& spec : base_specs(froms, containerfile, context)) {
        const BaseImage base = ensure_base_image(spec, context);
        if (base.tag == record.base_tag) {
            record.base_id = base.id;
        }
        record.base_built = record.base_built || base.built;
    }
    if (image_exists(tag, context)) {
        context.report(fmt::format("image {}: already built, reusing it", tag));
    } else {
        context.report(fmt::format("image {}: building {} with {}...", tag, containerfile.string(), context.runtime));
        run_or_throw(context, tag, "build", {"build", "--tag", tag, "--file", containerfile.string(), rendered_dir.string()});
        record.built = true;
    }
    record.image_id = inspect_image_id(tag, context);
    if (record.base_id.empty()) {
        record.base_id = pulled_base_id(record.base_tag, context);
    }
    if (context.migrate) {
        context.report(fmt::format("image {}: migrating it for the compute nodes...", tag));
        run_or_throw(context, tag, "migrate", {"migrate", tag});
    }
    record.packages = image_packages(tag, context);
    record.packages_sha256 = sha256_hex(record.packages);
    return record;
}

Json image_record_to_json(const ImageRecord& record) {
    Json json = Json::object();
    json["tag"] = record.tag;
    json["image_id"] = record.image_id;
    json["containerfile_sha256"] = record.containerfile_sha256;
    json["base_tag"] = record.base_tag;
    json["base_id"] = record.base_id;
    json["packages"] = record.packages;
    json["packages_sha256"] = record.packages_sha256;
    json["built"] = record.built;
    json["base_built"] = record.base_built;
    return json;
}

ImageRecord image_record_from_json(const Json& json, const std::string& where) {
    if (!json.is_object()) {
        throw input_error(fmt::format("{}: image: expected an object", where));
    }
    static const std::array<const char*, 9> k_keys = {
        "tag", "image_id", "containerfile_sha256", "base_tag", "base_id", "packages", "packages_sha256", "built", "base_built"};
    for (const auto& entry : json.as_object()) {
        const std::string& key = entry.first;
        if (std::none_of(k_keys.begin(), k_keys.end(), [&key](const char* known) { return key == known; })) {
            throw input_error(fmt::format("{}: image.{}: unknown field", where, terminal_text(key)));
        }
    }
    ImageRecord record;
    record.tag = string_member(json, "tag", where);
    if (const std::string problem = image_tag_problem(record.tag); !problem.empty()) {
        throw input_error(fmt::format("{}: image.tag: {}", where, problem));
    }
    record.image_id = hex_member(json, "image_id", where, false);
    record.containerfile_sha256 = hex_member(json, "containerfile_sha256", where, false);
    record.base_tag = string_member(json, "base_tag", where);
    if (const std::string problem = image_tag_problem(record.base_tag); !problem.empty()) {
        throw input_error(fmt::format("{}: image.base_tag: {}", where, problem));
    }
    record.base_id = hex_member(json, "base_id", where, true);
    record.packages = string_member(json, "packages", where);
    if (record.packages.size() > k_max_containerfile_bytes * 16 || package_lines(record.packages) != record.packages ||
        record.packages.empty()) {
        throw input_error(fmt::format("{}: image.packages: expected sorted \"name=version\" lines, one per package", where));
    }
    record.packages_sha256 = hex_member(json, "packages_sha256", where, false);
    if (sha256_hex(record.packages) != record.packages_sha256) {
        throw input_error(fmt::format("{}: image.packages_sha256: is not the sha256 of image.packages", where));
    }
    record.built = bool_member(json, "built", where);
    record.base_built = bool_member(json, "base_built", where);
    return record;
}

std::string diff_packages(const std::string& old_list, const std::string& new_list) {
    const auto before = package_map(old_list);
    const auto after = package_map(new_list);
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<std::string> changed;
    for (const auto& [name, version] : after) {
        const auto it = before.find(name);
        if (it == before.end()) {
            added.push_back(fmt::format("  {} {}", name, version));
        } else if (it->second != version) {
            changed.push_back(fmt::format("  {} {} -> {}", name, it->second, version));
        }
    }
    for (const auto& [name, version] : before) {
        if (after.count(name) == 0) {
            removed.push_back(fmt::format("  {} {}", name, version));
        }
    }
    std::string out;
    const auto section = [&](const char* title, const std::vector<std::string>& lines) {
        if (!lines.empty()) {
            out += fmt::format("{} ({}):\n{}\n", title, lines.size(), join(lines, "\n"));
        }
    };
    section("changed", changed);
    section("added", added);
    section("removed", removed);
    return out;
}

} // namespace harness
