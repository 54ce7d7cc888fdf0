#include "image/base_spec.hpp"

#include "card/yaml_document.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

namespace harness {

namespace {

constexpr std::size_t k_max_base_name_bytes = 64;
constexpr std::size_t k_key16 = 16;

const std::array<const char*, 6> k_fields = {"suite", "mirror", "variant", "packages", "components", "source_date_epoch"};

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'; }

bool is_lower_hex(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// A Debian package, suite, variant or component name: what dpkg and apt accept, so nothing
/// that could be read as an option or split by mmdebstrap's comma-separated --include.
bool is_debian_token(std::string_view text) {
    if (text.empty() || text.size() > 128 || text.front() == '-') {
        return false;
    }
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' || c == '_';
    });
}

class SpecReader {
public:
    explicit SpecReader(const YamlDocument& doc) : m_doc(doc) {}

    [[noreturn]] void fail(const YAML::Node& node, const std::string& field, const std::string& problem) const {
        throw input_error(fmt::format("{}: {}: {}", m_doc.location(node, field), field, problem));
    }

    std::string token(const std::string& field, bool required, const std::string& fallback = "") const {
        const YAML::Node node = m_doc.root()[field];
        if (!node.IsDefined() || node.IsNull()) {
            if (required) {
                fail(m_doc.root(), field, "missing (required)");
            }
            return fallback;
        }
        if (!node.IsScalar()) {
            fail(node, field, "expected a string");
        }
        std::string text = node.Scalar();
        if (!is_debian_token(text)) {
            fail(node, field, fmt::format("{} is not a Debian name (lower-case letters, digits, '.', '+', '-', '_')", enquote(text)));
        }
        return text;
    }

    std::vector<std::string> tokens(const std::string& field, bool required) const {
        const YAML::Node node = m_doc.root()[field];
        if (!node.IsDefined() || node.IsNull()) {
            if (required) {
                fail(m_doc.root(), field, "missing (required)");
            }
            return {};
        }
        if (!node.IsSequence()) {
            fail(node, field, "expected a list of names");
        }
        std::vector<std::string> out;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const YAML::Node item = node[i];
            const std::string item_field = fmt::format("{}[{}]", field, i);
            if (!item.IsScalar() || !is_debian_token(item.Scalar())) {
                fail(item, item_field, "expected a Debian package name (lower-case letters, digits, '.', '+', '-', '_')");
            }
            out.push_back(item.Scalar());
        }
        if (required && out.empty()) {
            fail(node, field, "empty: a base needs at least one package");
        }
        return out;
    }

    std::string mirror() const {
        const YAML::Node node = m_doc.root()["mirror"];
        if (!node.IsDefined() || node.IsNull()) {
            fail(m_doc.root(), "mirror", "missing (required), e.g. http://deb.debian.org/debian");
        }
        if (!node.IsScalar()) {
            fail(node, "mirror", "expected a URL");
        }
        std::string text = node.Scalar();
        const bool scheme = starts_with(text, "http://") || starts_with(text, "https://") || starts_with(text, "file:///");
        const bool clean = std::none_of(text.begin(), text.end(), [](char c) {
            return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
        });
        if (!scheme || !clean) {
            fail(node, "mirror", fmt::format("{} is not an http://, https:// or file:/// URL without spaces", enquote(text)));
        }
        return text;
    }

    long long epoch() const {
        const YAML::Node node = m_doc.root()["source_date_epoch"];
        if (!node.IsDefined() || node.IsNull()) {
            return 0;
        }
        const std::string text = node.IsScalar() ? node.Scalar() : std::string();
        if (text.empty() || text.size() > 12 || !all_digits(text)) {
            fail(node, "source_date_epoch", "expected seconds since 1970 (a non-negative integer)");
        }
        return std::stoll(text);
    }

private:
    const YamlDocument& m_doc;
};

} // namespace

std::string base_name_problem(const std::string& name) {
    if (name.empty()) {
        return "empty";
    }
    if (name.size() > k_max_base_name_bytes) {
        return fmt::format("longer than {} bytes", k_max_base_name_bytes);
    }
    if (name.front() == '.' || name.front() == '-' || name.front() == '_') {
        return "must start with a lower-case letter or digit";
    }
    if (!std::all_of(name.begin(), name.end(), is_name_char)) {
        return "only lower-case letters, digits, '.', '_' and '-' (it becomes a file name and an image tag)";
    }
    return "";
}

BaseSpec load_base_spec(const fs::path& home, const std::string& name) {
    if (const std::string problem = base_name_problem(name); !problem.empty()) {
        throw input_error(fmt::format("base image name {}: {}", enquote(name), problem));
    }
    const fs::path path = home / "containers" / "base" / (name + ".yaml");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        throw input_error(fmt::format("base image {}: no {} (the bases are containers/base/*.yaml)", enquote(name), path.string()));
    }
    const YamlDocument doc = YamlDocument::load(path);
    if (!doc.root().IsMap()) {
        throw input_error(fmt::format("{}: expected a mapping of suite, mirror, variant, packages", doc.location(doc.root(), "")));
    }
    for (const auto& entry : doc.root()) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
        const bool known = std::any_of(k_fields.begin(), k_fields.end(), [&](const char* field) { return key == field; });
        if (!known) {
            std::vector<std::string> names(k_fields.begin(), k_fields.end());
            const std::string near = closest_match(key, names);
            throw input_error(fmt::format("{}: {}: unknown field{}", doc.location(entry.first, key), enquote(key),
                                          near.empty() ? "" : fmt::format(" (did you mean {}?)", near)));
        }
    }
    const SpecReader reader(doc);
    BaseSpec spec;
    spec.name = name;
    spec.path = path;
    spec.suite = reader.token("suite", true);
    spec.mirror = reader.mirror();
    spec.variant = reader.token("variant", false, "minbase");
    spec.packages = reader.tokens("packages", true);
    spec.components = reader.tokens("components", false);
    spec.source_date_epoch = reader.epoch();
    return spec;
}

std::string base_key(const BaseSpec& spec) {
    std::vector<std::string> packages = spec.packages;
    std::sort(packages.begin(), packages.end());
    packages.erase(std::unique(packages.begin(), packages.end()), packages.end());
    std::vector<std::string> components = spec.components;
    std::sort(components.begin(), components.end());
    components.erase(std::unique(components.begin(), components.end()), components.end());
    // One field a line, names that cannot hold a newline: no two specs share a text.
    std::string text = "ccl-harness base v1\n";
    text += "suite=" + spec.suite + "\n";
    text += "mirror=" + spec.mirror + "\n";
    text += "variant=" + spec.variant + "\n";
    text += "components=" + join(components, ",") + "\n";
    text += "packages=" + join(packages, ",") + "\n";
    text += fmt::format("source_date_epoch={}\n", spec.source_date_epoch);
    return sha256_hex(text);
}

std::string base_tag(const BaseSpec& spec) { return k_base_tag_prefix + spec.name + ":" + base_key(spec).substr(0, k_key16); }

std::optional<std::string> base_name_of_tag(const std::string& tag) {
    const std::string prefix = k_base_tag_prefix;
    if (!starts_with(tag, prefix)) {
        return std::nullopt;
    }
    const std::string rest = tag.substr(prefix.size());
    const std::size_t colon = rest.find(':');
    if (colon == std::string::npos) {
        return std::nullopt;
    }
    const std::string name = rest.substr(0, colon);
    const std::string key = rest.substr(colon + 1);
    if (!base_name_problem(name).empty() || key.size() != k_key16 || !is_lower_hex(key)) {
        return std::nullopt;
    }
    return name;
}

std::optional<std::string> base_key16_of_tag(const std::string& tag) {
    if (!base_name_of_tag(tag)) {
        return std::nullopt;
    }
    return tag.substr(tag.rfind(':') + 1);
}

} // namespace harness
