#pragma once
// `validate` as a library call: every problem in a card or profile, never just the first.
#include "card/diagnostic.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>
#include <vector>

namespace harness {

struct ValidateOptions {
    bool strict = false;                ///< also check that the card can run on its target
    std::string cluster;                ///< target for --strict; inferred when empty
    std::vector<std::string> overrides; ///< --set PATH=VALUE
    bool profile = false;               ///< the files are cluster profiles, not cards
    fs::path home;                      ///< the harness home (--strict: profiles, docs/contracts/)
};

struct ValidationResult {
    std::string file;
    Diagnostics diagnostics;
    bool unreadable = false; ///< not YAML at all, or not a file
    /// --strict, when the card rendered: what it renders to (the framework on the target, the
    /// geometry, the files), so a corpus report can say it without rendering again.
    std::string framework;
    std::string target;
    long long nodes = 0;
    long long ranks_per_node = 0;
    std::vector<std::string> rendered;
};

ValidationResult validate_file(const fs::path& file, const ValidateOptions& options);

Json validation_to_json(const std::vector<ValidationResult>& results);

} // namespace harness
