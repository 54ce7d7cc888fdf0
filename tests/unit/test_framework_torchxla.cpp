#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "reference_render.hpp"
#include "render/render.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using namespace harness::test;

namespace {

const char* k_llama = "workloads/llama-3.1-8b-torchxla-tpu/llama-3.1-8b-torchxla-tpu.yaml";

struct Rendered {
    Plan plan;
    Diagnostics diagnostics;
    std::string remote;
};

Rendered render(const std::string& text) {
    const ReferenceRender r = render_reference(text, {}, "tpu-v6e", true);
    return {r.plan, r.diagnostics, r.file("remote.sh")};
}

bool has_arg(const Rendered& rendered, const std::string& arg) {
    return rendered.remote.find("        " + arg + "\n") != std::string::npos;
}

bool says(const Rendered& rendered, const std::string& text) { return rendered.diagnostics.format().find(text) != std::string::npos; }

} // namespace

TEST_CASE("the torchxla reference card renders torchprime's own overrides") {
    const Rendered r = render(reference_card_text(k_llama));
    INFO(r.diagnostics.format());
    CHECK_FALSE(r.diagnostics.has_errors());
    CHECK(has_arg(r, "model=llama-3.1-8b"));
    CHECK(has_arg(r, "model/sharding=llama-fsdp-tp"));
    CHECK(has_arg(r, "dataset.block_size=512"));
    CHECK(has_arg(r, "task.global_batch_size=4"));
    CHECK(has_arg(r, "task.max_steps=20"));
    CHECK(has_arg(r, "ici_mesh.data=1"));
    CHECK(has_arg(r, "ici_mesh.fsdp=2"));
    CHECK(has_arg(r, "ici_mesh.tensor=4"));
    CHECK(has_arg(r, "torch_dtype=bfloat16"));
    // wait 1 + warmup 3, active 10: the trace starts after step 3 and stops after step 13.
    CHECK(has_arg(r, "profile_start_step=3"));
    CHECK(has_arg(r, "profile_end_step=13"));
}

TEST_CASE("each card field that describes the torchxla run changes the render or is refused") {
    const std::string card = reference_card_text(k_llama);
    SECTION("model family") {
        CHECK(has_arg(render(with(card, "model_family: llama-3.1-8b", "model_family: llama-3.1-70b")), "model=llama-3.1-70b"));
        CHECK(says(render(with(card, "model_family: llama-3.1-8b", "model_family: qwen-3-4b")),
                   "qwen-3-4b is not supported for torchxla"));
    }
    SECTION("precision") {
        CHECK(says(render(with(card, "precision: bf16", "precision: fp32")), "asserts torch_dtype bfloat16 (train.py:60)"));
    }
    SECTION("dataset") { CHECK(says(render(with(card, "dataset: wikitext #", "dataset: c4 #")), "c4 is not supported for torchxla")); }
    SECTION("parallelism") {
        const Rendered fsdp = render(with(with(card, "    dp_shard: 2", "    dp_shard: 8"), "    tp: 4", "    tp: 1"));
        CHECK(has_arg(fsdp, "ici_mesh.fsdp=8"));
        CHECK(has_arg(fsdp, "model/sharding=llama-fsdp"));
        const Rendered pp = render(with(with(card, "    dp_shard: 2", "    dp_shard: 1"), "    pp: 1", "    pp: 2"));
        CHECK(says(pp, "pp 2 is not supported for torchxla"));
        const Rendered cp = render(with(with(card, "    dp_shard: 2", "    dp_shard: 1"), "    cp: 1", "    cp: 2"));
        CHECK(says(cp, "cp 2 is not supported for torchxla"));
    }
    SECTION("steps and window") {
        CHECK(has_arg(render(with(card, "  steps: 20", "  steps: 30")), "task.max_steps=30"));
        // torchprime ends a trace by step max_steps-5: the window of 14 steps needs 18.
        CHECK(says(render(with(card, "  steps: 20", "  steps: 17")), "it needs steps >= 18"));
        const Rendered first = render(with(card, "    wait: 1\n    warmup: 3", "    wait: 0\n    warmup: 0"));
        CHECK(says(first, "torchprime cannot trace the first step"));
    }
}
