#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "reference_render.hpp"
#include "render/render.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using namespace harness::test;

namespace {

const char* k_deepseek = "workloads/deepseek-v2-16b-maxtext-tpu-v6e/deepseek-v2-16b-maxtext-tpu-v6e.yaml";

std::string reference_card() { return reference_card_text(k_deepseek); }

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

} // namespace

TEST_CASE("the DeepSeek reference card renders MaxText's own keys") {
    const Rendered r = render(reference_card());
    INFO(r.diagnostics.format());
    CHECK_FALSE(r.diagnostics.has_errors());
    CHECK(has_arg(r, "model_name=deepseek2-16b"));
    CHECK(has_arg(r, "dtype=bfloat16"));
    CHECK(has_arg(r, "weight_dtype=float32"));
    CHECK(has_arg(r, "dataset_type=synthetic"));
    CHECK(has_arg(r, "per_device_batch_size=1"));
    CHECK(has_arg(r, "max_target_length=1024"));
    CHECK(has_arg(r, "steps=13"));
    CHECK(has_arg(r, "ici_tensor_parallelism=2"));
    CHECK(has_arg(r, "ici_expert_parallelism=4"));
    CHECK(has_arg(r, "ici_fsdp_parallelism=1"));
    CHECK(has_arg(r, "ici_data_parallelism=1"));
    // profile wait 2 + warmup 3, active 5: 0-based steps 5..9 = steps 6..10.
    CHECK(has_arg(r, "skip_first_n_steps_for_profiler=5"));
    CHECK(has_arg(r, "profiler_steps=5"));
}

TEST_CASE("each card field that describes the MaxText run changes the render or is refused") {
    const std::string card = reference_card();
    SECTION("model family") {
        // The card's launch.args name the model too: drop them to let the family decide.
        const std::string base = with(card, "  args:\n    - model_name=deepseek2-16b\n", "");
        const Rendered r = render(
            with(with(base, "model_family: deepseek-v2-16b", "model_family: llama-3.1-8b"), "moe: true", "moe: false"));
        CHECK(has_arg(r, "model_name=llama3.1-8b"));
        const Rendered unknown = render(with(base, "model_family: deepseek-v2-16b", "model_family: falcon-40b"));
        CHECK(unknown.diagnostics.format().find("falcon-40b is not supported for maxtext") != std::string::npos);
    }
    SECTION("model_name in launch.args that disagrees with the family") {
        const Rendered r = render(with(card, "model_name=deepseek2-16b", "model_name=llama3.1-8b"));
        CHECK(r.diagnostics.format().find("but launch.args runs model_name=llama3.1-8b") != std::string::npos);
    }
    SECTION("precision") {
        CHECK(has_arg(render(with(card, "precision: bf16", "precision: fp32")), "dtype=float32"));
        const Rendered fp8 = render(with(card, "precision: bf16", "precision: fp8"));
        CHECK(fp8.diagnostics.has_errors());
        CHECK(fp8.diagnostics.format().find("fp8 is not supported for maxtext") != std::string::npos);
    }
    SECTION("dataset") {
        const Rendered r = render(with(card, "dataset: synthetic", "dataset: wikitext"));
        CHECK(r.diagnostics.has_errors());
        CHECK(r.diagnostics.format().find("wikitext is not supported for maxtext") != std::string::npos);
    }
    SECTION("batch, sequence, steps") {
        CHECK(has_arg(render(with(card, "batch_size: 8 #", "batch_size: 16 #")), "per_device_batch_size=2"));
        CHECK(render(with(card, "batch_size: 8 #", "batch_size: 12 #")).diagnostics.has_errors());
        CHECK(has_arg(render(with(card, "seq_len: 1024", "seq_len: 2048")), "max_target_length=2048"));
        CHECK(has_arg(render(with(card, "steps: 13", "steps: 20")), "steps=20"));
        // The window needs steps >= W + A (MaxText stops the profiler at steps - 1).
        CHECK(render(with(card, "steps: 13", "steps: 9")).diagnostics.format().find("ends before the traced window") !=
              std::string::npos);
    }
    SECTION("window") {
        const Rendered r = render(with(card, "    warmup: 3\n    active: 5", "    warmup: 1\n    active: 2"));
        CHECK(has_arg(r, "skip_first_n_steps_for_profiler=3"));
        CHECK(has_arg(r, "profiler_steps=2"));
    }
    SECTION("parallelism") {
        const Rendered r = render(with(with(card, "    tp: 2", "    tp: 1"), "    ep: 4", "    ep: 2"));
        CHECK(has_arg(r, "ici_fsdp_parallelism=4"));
        CHECK(has_arg(r, "ici_expert_parallelism=2"));
        const Rendered bad = render(with(card, "    ep: 4", "    ep: 3"));
        CHECK(bad.diagnostics.format().find("does not divide the 8 chips") != std::string::npos);
    }
}
