#include "util/yaml_bounded.hpp"

#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <sstream>
#include <unordered_map>
#include <vector>
#include <yaml-cpp/eventhandler.h>

namespace harness {

namespace {

std::string position(const std::string& display_name, const YAML::Mark& mark) {
    // yaml-cpp positions are 0-based; editors count from 1.
    return fmt::format("{}:{}:{}", display_name, mark.line + 1, mark.column + 1);
}

/// Reads the parser's events before any tree is built, so that a document is refused while it
/// is cheap to refuse: too many nodes, aliases that expand past the bound (each alias counts
/// the nodes of what it names, as every later walk of the tree will), nesting past the bound,
/// and a mapping key that is not a scalar (the card's tools and ours key by text).
class DocumentBounds final : public YAML::EventHandler {
public:
    explicit DocumentBounds(std::string display_name)
        : m_display_name(std::move(display_name)), m_max_nodes(input_limit(InputLimit::yaml_nodes)),
          m_max_expanded(input_limit(InputLimit::yaml_expanded_nodes)), m_max_depth(input_limit(InputLimit::nesting_depth)) {}

    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
        leaf(mark, anchor);
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const auto found = m_anchors.find(anchor);
        const Named named = found == m_anchors.end() ? Named{} : found->second;
        child(mark, named.collection, named.expanded);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
        start(mark, anchor, false);
    }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
        start(mark, anchor, true);
    }
    void OnSequenceEnd() override { end(); }
    void OnMapEnd() override { end(); }

private:
    struct Named {
        bool collection = false;
        std::uint64_t expanded = 1;
    };
    struct Open {
        bool map = false;
        std::uint64_t children = 0; ///< events seen directly inside: keys and values alternate in a map
        std::uint64_t expanded = 1; ///< this collection's nodes, aliases expanded
        YAML::anchor_t anchor = 0;
    };

    [[noreturn]] void refuse(const YAML::Mark& mark, const std::string& why) const {
        throw input_error(fmt::format("{}: {}", position(m_display_name, mark), why));
    }

    void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
        child(mark, false, 1);
        if (anchor != 0) {
            m_anchors[anchor] = Named{false, 1};
        }
    }

    /// A node inside the innermost open collection (or the root): counts it and checks its place.
    void child(const YAML::Mark& mark, bool collection, std::uint64_t expanded) {
        if (++m_nodes > m_max_nodes) {
            refuse(mark, fmt::format("more than {} YAML nodes ({})", m_max_nodes, input_limit_hint(InputLimit::yaml_nodes)));
        }
        m_expanded += expanded;
        if (m_expanded > m_max_expanded) {
            refuse(mark, fmt::format("aliases expand the document past {} nodes: an alias bomb? ({})", m_max_expanded,
                                     input_limit_hint(InputLimit::yaml_expanded_nodes)));
        }
        if (m_open.empty()) {
            return;
        }
        Open& parent = m_open.back();
        if (parent.map && parent.children % 2 == 0 && collection) {
            refuse(mark, "a mapping key must be a scalar (text), not a sequence or a mapping");
        }
        ++parent.children;
        parent.expanded += expanded;
    }

    void start(const YAML::Mark& mark, YAML::anchor_t anchor, bool map) {
        child(mark, true, 1);
        if (m_open.size() >= m_max_depth) {
            refuse(mark, fmt::format("nested deeper than {} levels ({})", m_max_depth, input_limit_hint(InputLimit::nesting_depth)));
        }
        m_open.push_back(Open{map, 0, 1, anchor});
    }

    void end() {
        const Open closed = m_open.back();
        m_open.pop_back();
        // child() already counted this collection's own node in its parent; its content joins now.
        if (!m_open.empty()) {
            m_open.back().expanded += closed.expanded - 1;
        }
        if (closed.anchor != 0) {
            m_anchors[closed.anchor] = Named{true, closed.expanded};
        }
    }

    std::string m_display_name;
    std::uint64_t m_max_nodes;
    std::uint64_t m_max_expanded;
    std::uint64_t m_max_depth;
    std::uint64_t m_nodes = 0;
    std::uint64_t m_expanded = 0;
    std::vector<Open> m_open;
    std::unordered_map<YAML::anchor_t, Named> m_anchors;
};

} // namespace

YAML::Node parse_yaml_bounded(const std::string& text, const std::string& display_name) {
    const std::uint64_t max_bytes = input_limit(InputLimit::card_bytes);
    if (text.size() > max_bytes) {
        throw input_error(fmt::format("{}: {} bytes, larger than a YAML file may be ({})", display_name, text.size(),
                                      input_limit_hint(InputLimit::card_bytes)));
    }
    try {
        {
            std::istringstream stream(text);
            YAML::Parser parser(stream);
            DocumentBounds bounds(display_name);
            parser.HandleNextDocument(bounds); // YAML::Load, too, reads the first document only
        }
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw input_error(fmt::format("{}: invalid YAML: {}", position(display_name, e.mark), e.msg));
    }
}

YAML::Node load_yaml_bounded(const fs::path& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::is_directory(status)) {
        throw input_error(fmt::format("{}: is a directory, expected a YAML file", path.string()));
    }
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        throw input_error(fmt::format("{}: not a regular file, expected a YAML file", path.string()));
    }
    // Refused before it is read: a huge file must not be slurped to be measured.
    if (const std::uintmax_t size = fs::file_size(path, ec); !ec && size > input_limit(InputLimit::card_bytes)) {
        throw input_error(fmt::format("{}: {} bytes, larger than a YAML file may be ({})", path.string(), size,
                                      input_limit_hint(InputLimit::card_bytes)));
    }
    return parse_yaml_bounded(read_file(path), path.string());
}

} // namespace harness
