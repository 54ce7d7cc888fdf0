#pragma once
// JSON Schema (draft-07, what yaml-language-server and python3-jsonschema both read) generated
// from a FieldSpec table, so an editor checks a card as `validate` does while it is typed. The
// schema mirrors the checker's errors only: what `validate` merely warns about (unknown keys,
// fields in their old place, a lone value for a list) stays valid, flagged for editors with
// `deprecationMessage` (a yaml-language-server warning; other validators ignore it).
#include "card/schema.hpp"

#include <string>
#include <vector>

namespace harness {

struct JsonSchemaInfo {
    std::string title;
    std::string description;
    std::vector<std::string> misplaced_sections; ///< as for check_document
    std::vector<std::string> lifted_sections;    ///< misplaced ones read where they belong, with a warning
    std::string closed_section;                  ///< a top-level section whose unknown keys are errors (launch)
};

/// The schema as pretty-printed JSON (two-space indent, trailing newline). Properties are in
/// the table's order; the same table always gives the same bytes.
std::string json_schema(const std::vector<FieldSpec>& spec, const JsonSchemaInfo& info);

/// `ccl-harness schema card` (card_schema()) and `ccl-harness schema cluster` (cluster_schema()).
std::string card_json_schema();
std::string cluster_json_schema();

} // namespace harness
