#include "card/json_schema.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct SchemaOptions {
    std::string kind = "card";
};

int run_schema(const SchemaOptions& options) {
    if (options.kind == "card") {
        std::cout << card_json_schema();
    } else if (options.kind == "cluster") {
        std::cout << cluster_json_schema();
    } else {
        throw input_error(fmt::format("schema {}: expected card or cluster", options.kind));
    }
    return k_exit_ok;
}

} // namespace

void add_schema(CLI::App& sub, Action& action) {
    auto options = std::make_shared<SchemaOptions>();
    sub.add_option("kind", options->kind, "card (default) or cluster");
    sub.footer("Prints the JSON Schema (draft-07) generated from the field table validate checks against. It\n"
               "rejects what validate reports as errors and accepts what it only warns about (editors using\n"
               "yaml-language-server still flag unknown keys). The checkout keeps copies in docs/schema/;\n"
               "a card points its editor at one with a first line such as\n"
               "  # yaml-language-server: $schema=../../docs/schema/card.schema.json\n"
               "Examples:\n"
               "  ccl-harness schema card > docs/schema/card.schema.json\n"
               "  ccl-harness schema cluster > docs/schema/cluster.schema.json");
    sub.callback([options, &action] { action = [options] { return run_schema(*options); }; });
}

} // namespace harness::cli
