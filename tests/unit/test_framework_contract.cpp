#include "plan/frameworks/contract.hpp"
#include "test_context.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

namespace {

Plan plan_of(const std::string& framework, const std::string& repo, const std::string& ref) {
    Plan plan;
    plan.framework = framework;
    plan.source_repo = repo;
    plan.source_ref = ref;
    return plan;
}

const char* k_argparse = R"(framework: demo
ref: v1
parser: argparse
options:
  - {name: --hidden-size, takes: 1, source: a.py:1}
  - {name: --bf16, takes: 0, source: a.py:2}
)";

} // namespace

TEST_CASE("a contract is found by framework or repository name and ref") {
    TempDir dir;
    dir.write("demo-v1.yaml", k_argparse);
    dir.write("tpu-inference-v2.yaml", "parser: argparse\noptions: [{name: --model}]\n");
    dir.write("broken-v1.yaml", "options: [unclosed\n");
    const auto direct = find_contract(plan_of("demo", "https://x/demo.git", "v1"), dir.path());
    REQUIRE(direct);
    CHECK(direct->parser == "argparse");
    CHECK(direct->options == std::set<std::string>{"--hidden-size", "--bf16"});
    const auto by_repo = find_contract(plan_of("vllm", "https://github.com/vllm-project/tpu-inference.git/", "v2"), dir.path());
    REQUIRE(by_repo);
    CHECK(by_repo->options.count("--model") == 1);
    CHECK_FALSE(find_contract(plan_of("demo", "", "v2"), dir.path()));         // another ref
    CHECK_FALSE(find_contract(plan_of("demo", "", ""), dir.path()));           // no ref pinned
    CHECK_FALSE(find_contract(plan_of("demo", "", "../demo-v1"), dir.path())); // never outside the directory
    CHECK_FALSE(find_contract(plan_of("broken", "", "v1"), dir.path()));       // unreadable: no contract, no throw
}

TEST_CASE("launch.args outside a contract: option names for argparse, keys for pyconfig") {
    FrameworkContract argparse;
    argparse.parser = "argparse";
    argparse.options = {"--hidden-size", "--bf16"};
    CHECK(args_outside_contract({"--hidden-size", "64", "--bf16", "--hidden-size=32"}, argparse).empty());
    CHECK(args_outside_contract({"--hiden-size=3", "--bf16", "value", "-x", "--"}, argparse) ==
          std::vector<std::string>{"--hiden-size=3"});
    FrameworkContract pyconfig;
    pyconfig.parser = "pyconfig";
    pyconfig.options = {"steps", "dtype"};
    CHECK(args_outside_contract({"steps=3", "dtype=bfloat16", "MaxText/configs/base.yml"}, pyconfig).empty());
    CHECK(args_outside_contract({"stpes=3", "=x"}, pyconfig) == std::vector<std::string>{"stpes=3"});
}

TEST_CASE("every shipped contract parses and lists options") {
    for (const auto& entry : fs::directory_iterator(harness_home() / "docs" / "contracts")) {
        if (entry.path().extension() != ".yaml") {
            continue;
        }
        const std::string stem = entry.path().stem().string();
        INFO(entry.path().string());
        // <framework>-<ref>: both may hold '-', so try each split find_contract could have made.
        bool found = false;
        for (std::size_t at = stem.find('-'); at != std::string::npos && !found; at = stem.find('-', at + 1)) {
            const auto contract = find_contract(plan_of(stem.substr(0, at), "", stem.substr(at + 1)), entry.path().parent_path());
            found = contract && !contract->options.empty() && !contract->parser.empty();
        }
        CHECK(found);
    }
}
