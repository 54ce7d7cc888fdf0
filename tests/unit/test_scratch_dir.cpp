#include "util/scratch_dir.hpp"

#include <catch2/catch.hpp>

using namespace harness;

TEST_CASE("with_scratch_paths_shown names the bundle, never the scratch directory", "[scratch_dir]") {
    const fs::path dir = "/tmp/ccl-harness-metrics-AbC123/bundle";
    CHECK(with_scratch_paths_shown("/tmp/ccl-harness-metrics-AbC123/bundle/run/kineto_trace_0.json: byte 9: bad", dir, "r.tar.zst:") ==
          "r.tar.zst:run/kineto_trace_0.json: byte 9: bad");
    // Every occurrence, a trailing slash on the directory, and an empty `shown` (relative names).
    CHECK(with_scratch_paths_shown("a /tmp/ccl-harness-metrics-AbC123/bundle/x and /tmp/ccl-harness-metrics-AbC123/bundle/y",
                                   "/tmp/ccl-harness-metrics-AbC123/bundle/", "") == "a x and y");
    // A sibling whose name starts the same is not inside the directory.
    CHECK(with_scratch_paths_shown("/tmp/ccl-harness-metrics-AbC123/bundle2/x", dir, "r:") ==
          "/tmp/ccl-harness-metrics-AbC123/bundle2/x");
    // A shown text that holds the prefix itself cannot loop.
    CHECK(with_scratch_paths_shown("/d/x", "/d", "/d/") == "/d/x");
    CHECK(with_scratch_paths_shown("/etc/passwd", "/", "r:") == "/etc/passwd");
}
