// Which image each container ran, as the runtime reports it (run/container_ledger.hpp), and the
// provenance record made of it (run/container_provenance.hpp). The reports are what
// `podman ps --all --no-trunc --format json` prints (podman 4.3.1: an array of objects with Id,
// Image, ImageID, Labels...).
#include "image/image_build.hpp"
#include "run/container_ledger.hpp"
#include "run/container_provenance.hpp"
#include "scripted_runner.hpp"
#include "test_context.hpp"
#include "util/sha256.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::ScriptedRunner;
using harness::test::TempDir;

namespace {

const std::string k_image(64, 'a');
const std::string k_other(64, 'b');

std::string report(const std::vector<std::pair<std::string, std::string>>& containers) {
    Json array = Json::array();
    for (const auto& [id, image] : containers) {
        array.push_back(Json(Json::Object{{"Id", id}, {"Image", "localhost/ccl-torch-ddp:0123456789abcdef"}, {"ImageID", image}}));
    }
    return array.dump();
}

Plan container_plan() {
    Plan plan;
    plan.container_image = "ccl-base:bookworm-torch";
    plan.container_runtime = "podman";
    plan.container_build = "localhost/ccl-torch-ddp:0123456789abcdef";
    return plan;
}

void write_image_record(const TempDir& dir, const std::string& image_id) {
    ImageRecord image;
    image.tag = "localhost/ccl-torch-ddp:0123456789abcdef";
    image.image_id = image_id;
    image.containerfile_sha256 = std::string(64, 'c');
    image.base_tag = "localhost/ccl-base/bookworm-torch:0123456789abcdef";
    image.base_id = std::string(64, 'd');
    image.packages = "python3-torch=1.13.1+dfsg-4\n";
    image.packages_sha256 = sha256_hex(image.packages);
    dir.write(k_image_record_name, image_record_to_json(image).dump());
}

} // namespace

TEST_CASE("the container ledger reads every node's report", "[container_ledger]") {
    TempDir dir;
    SECTION("no directory: nothing ran in a container") {
        const ContainerLedger ledger = read_container_ledger(dir.path() / "container");
        CHECK(ledger.containers.empty());
        CHECK(ledger.problems.empty());
    }
    SECTION("two nodes, sorted by node; sha256: prefixes dropped") {
        dir.write("container/ran-node2.json", report({{std::string(64, '2'), "sha256:" + k_image}}));
        dir.write("container/ran-node1.json", report({{std::string(64, '1'), k_image}}));
        dir.write("container/image.json", "{}"); // not a report
        const ContainerLedger ledger = read_container_ledger(dir.path() / "container");
        REQUIRE(ledger.containers.size() == 2);
        CHECK(ledger.containers[0].node == "node1");
        CHECK(ledger.containers[1].node == "node2");
        CHECK(ledger.containers[1].image_id == k_image);
        CHECK(ledger.problems.empty());
    }
    SECTION("a report that is not podman's answer is a problem naming the file, never a throw") {
        dir.write("container/ran-node1.json", "Error: something went wrong\n");
        dir.write("container/ran-node2.json", "{\"Id\": \"x\"}");
        dir.write("container/ran-node3.json", "[{\"Id\": \"x\"}]");
        const ContainerLedger ledger = read_container_ledger(dir.path() / "container");
        CHECK(ledger.containers.empty());
        REQUIRE(ledger.problems.size() == 3);
        CHECK(ledger.problems[0].find("ran-node1.json") != std::string::npos);
        CHECK(ledger.problems[1].find("JSON array") != std::string::npos);
        CHECK(ledger.problems[2].find("without Id and ImageID") != std::string::npos);
    }
}

TEST_CASE("a local run's containers are listed by label, recorded, then removed", "[container_ledger]") {
    TempDir dir;
    ScriptedRunner runner;
    const fs::path rendered = dir.path() / "run" / "rendered";
    const std::string filter = "label=ccl-harness.run=" + rendered.string();
    const std::string list = "podman ps --all --no-trunc --filter " + filter + " --format json";
    SECTION("listed and pruned") {
        runner.expect(list, report({{std::string(64, '1'), k_image}})).expect("podman container prune --force --filter " + filter);
        CHECK(record_local_containers(runner, "podman", rendered, dir.path() / "container", "vm").empty());
        CHECK(runner.done());
        CHECK(read_container_ledger(dir.path() / "container").containers.size() == 1);
    }
    SECTION("podman failing is a problem, and nothing is removed") {
        runner.expect(list, "Error: cannot connect", 125);
        const std::string problem = record_local_containers(runner, "podman", rendered, dir.path() / "container", "vm");
        CHECK(problem.find("cannot connect") != std::string::npos);
        CHECK(runner.done());
        CHECK_FALSE(fs::exists(dir.path() / "container" / "ran-vm.json"));
    }
}

TEST_CASE("provenance names the image the runtime reports ran", "[container_ledger]") {
    TempDir dir;
    std::vector<std::string> warnings;
    SECTION("no container") {
        Plan plan;
        plan.container_runtime = "none";
        CHECK(container_provenance(plan, dir.path(), warnings).is_null());
    }
    SECTION("the plan's part only, without an image record") {
        Json container = container_provenance(container_plan(), dir.path(), warnings);
        CHECK(container.find("image_id") == nullptr);
        CHECK(container["build"].as_string() == "localhost/ccl-torch-ddp:0123456789abcdef");
        CHECK(warnings.empty());
    }
    SECTION("built and ran the same image") {
        write_image_record(dir, k_image);
        dir.write("container/ran-vm.json", report({{std::string(64, '1'), k_image}, {std::string(64, '2'), k_image}}));
        Json container = container_provenance(container_plan(), dir.path(), warnings);
        CHECK(container["image_id"].as_string() == k_image);
        CHECK(container["ran"].as_array().size() == 2);
        CHECK(container["base"]["id"].as_string() == std::string(64, 'd'));
        CHECK(warnings.empty());
    }
    SECTION("ranks that ran different images: no image id, and a warning") {
        write_image_record(dir, k_image);
        dir.write("container/ran-vm.json", report({{std::string(64, '1'), k_image}, {std::string(64, '2'), k_other}}));
        Json container = container_provenance(container_plan(), dir.path(), warnings);
        CHECK(container["image_id"].is_null());
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find("2 different images") != std::string::npos);
    }
    SECTION("ran another image than the one built: recorded as it ran, and a warning") {
        write_image_record(dir, k_image);
        dir.write("container/ran-vm.json", report({{std::string(64, '1'), k_other}}));
        Json container = container_provenance(container_plan(), dir.path(), warnings);
        CHECK(container["image_id"].as_string() == k_other);
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find("but the harness built") != std::string::npos);
    }
    SECTION("no container reported") {
        write_image_record(dir, k_image);
        Json container = container_provenance(container_plan(), dir.path(), warnings);
        CHECK(container["image_id"].is_null());
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find("reported no container") != std::string::npos);
    }
}
