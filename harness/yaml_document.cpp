#include "yaml_document.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

void parse_or_throw(const std::string& text, const std::string& display_name, YAML::Node& root) {
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        // yaml-cpp positions are 0-based; editors count from 1.
        throw input_error(fmt::format("{}:{}:{}: invalid YAML: {}", display_name, e.mark.line + 1,
                                      e.mark.column + 1, e.msg));
    }
}

} // namespace

YamlDocument YamlDocument::parse(const std::string& text, const std::string& display_name) {
    YamlDocument doc;
    parse_or_throw(text, display_name, doc.m_root);
    doc.m_display_name = display_name;
    doc.m_path = display_name;
    return doc;
}

YamlDocument YamlDocument::load(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw input_error(fmt::format("{}: is a directory, expected a YAML file", path.string()));
    }
    YamlDocument doc = parse(read_file(path), path.string());
    doc.m_path = path;
    return doc;
}

void YamlDocument::set(const std::string& assignment) {
    const std::size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        throw input_error(fmt::format("--set {}: expected PATH=VALUE, e.g. "
                                      "Model-executor.model_plan_parallelization.tp=4",
                                      enquote(assignment)));
    }
    const std::string field = assignment.substr(0, eq);
    const std::vector<std::string> parts = split(field, '.');
    for (const auto& part : parts) {
        if (part.empty()) {
            throw input_error(fmt::format("--set {}: empty path component", enquote(assignment)));
        }
    }
    YAML::Node value;
    try {
        value = YAML::Load(assignment.substr(eq + 1));
    } catch (const YAML::Exception& e) {
        throw input_error(fmt::format("--set {}: invalid value: {}", enquote(assignment), e.msg));
    }
    if (!m_root.IsMap()) {
        throw input_error(fmt::format("--set {}: the card is not a mapping", enquote(assignment)));
    }
    YAML::Node current = m_root;
    std::string walked;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        walked += (walked.empty() ? "" : ".") + parts[i];
        YAML::Node next = current[parts[i]];
        if (!next.IsDefined() || next.IsNull()) {
            next = YAML::Node(YAML::NodeType::Map);
            current[parts[i]] = next;
            next = current[parts[i]];
        } else if (!next.IsMap()) {
            throw input_error(fmt::format("--set {}: {} is not a mapping", enquote(assignment), walked));
        }
        current.reset(next);
    }
    current[parts.back()] = value;
    m_overrides[field] = assignment;
}

std::string YamlDocument::location(const YAML::Node& node, const std::string& field_path) const {
    for (const auto& [field, assignment] : m_overrides) {
        if (field_path == field || starts_with(field_path, field + ".")) {
            return "--set " + assignment;
        }
    }
    if (node.IsDefined()) {
        const YAML::Mark mark = node.Mark();
        if (mark.line >= 0 && mark.pos >= 0) {
            return fmt::format("{}:{}:{}", m_display_name, mark.line + 1, mark.column + 1);
        }
    }
    return m_display_name;
}

std::string YamlDocument::emit() const {
    YAML::Emitter out;
    out << m_root;
    return std::string(out.c_str()) + "\n";
}

YAML::Node find_node(const YAML::Node& root, const std::string& dotted) {
    const YAML::Node* at = &root;
    YAML::Node holder;
    for (const auto& part : split(dotted, '.')) {
        if (!at->IsMap()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        const YAML::Node child = (*at)[part];
        if (!child.IsDefined()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        holder.reset(child);
        at = &holder;
    }
    return *at;
}

std::string scalar_text(const YAML::Node& node) {
    return node.IsDefined() && node.IsScalar() ? node.Scalar() : std::string();
}

} // namespace harness
