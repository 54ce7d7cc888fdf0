#include "plan/frameworks/hf_text.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness {

std::optional<HfText> wikitext_dataset(const std::string& dataset, const std::string& default_size) {
    std::string name = to_lower(trim(dataset));
    std::replace(name.begin(), name.end(), '_', '-');
    std::replace(name.begin(), name.end(), ' ', '-');
    // The Hub's ids: Salesforce/wikitext today, wikitext/CONFIG in the old canonical spelling.
    for (const std::string owner : {"salesforce/", "wikitext/"}) {
        if (starts_with(name, owner)) {
            name = name.substr(owner.size());
        }
    }
    const std::string id = "Salesforce/wikitext";
    if (name == "wikitext-103-v1" || name == "wikitext-2-v1") {
        return HfText{id, name};
    }
    for (const std::string size : {"103", "2"}) {
        const std::string base = "wikitext-" + size;
        if (name == base || name == "wikitext" + size || name == base + "-raw" || name == base + "-raw-v1") {
            return HfText{id, base + "-raw-v1"};
        }
    }
    if (name == "wikitext") {
        return HfText{id, fmt::format("wikitext-{}-raw-v1", default_size)};
    }
    return std::nullopt;
}

} // namespace harness
