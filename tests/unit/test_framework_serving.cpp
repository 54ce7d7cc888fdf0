// harness/plan/frameworks/vllm.cpp, vllm_serve.cpp and sglang.cpp: each card field that describes a serving run changes
// the rendered Perlmutter script, or strict planning refuses it naming the field.
#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "reference_render.hpp"
#include "render/render.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using namespace harness::test;

namespace {

const char* k_vllm = "workloads/qwen3-4b-vllm-perlmutter/qwen3-4b-vllm-perlmutter.yaml";
const char* k_sglang = "workloads/deepseek-moe-16b-sglang-perlmutter/deepseek-moe-16b-sglang-perlmutter.yaml";

std::string reference_card(const char* path) { return reference_card_text(path); }

struct Rendered {
    Plan plan;
    Diagnostics diagnostics;
    std::string script;
};

Rendered render(const std::string& text) {
    const ReferenceRender r = render_reference(text, {}, "perlmutter", true);
    return {r.plan, r.diagnostics, r.diagnostics.has_errors() ? std::string() : r.file("launch.sbatch")};
}

bool has(const Rendered& r, const std::string& text) { return r.script.find(text) != std::string::npos; }

/// Strict planning refused the card, naming `field`.
void refused(const Rendered& r, const std::string& field, const std::string& why) {
    INFO(r.diagnostics.format());
    CHECK(r.diagnostics.has_errors());
    CHECK(r.diagnostics.format().find(field) != std::string::npos);
    CHECK(r.diagnostics.format().find(why) != std::string::npos);
}

const std::string k_tp = "    tp: 4\n";
const std::string k_ep = "    ep: 1\n";

} // namespace

TEST_CASE("the vLLM reference card renders a profiler pass and a timed pass") {
    const Rendered r = render(reference_card(k_vllm));
    INFO(r.diagnostics.format());
    REQUIRE_FALSE(r.diagnostics.has_errors());
    CHECK(has(r, "    --model Qwen/Qwen3-4B\n"));
    CHECK(has(r, "    --dtype bfloat16\n"));
    CHECK(has(r, "    --tensor-parallel-size 4\n"));
    CHECK(has(r, "    --num-iters-warmup 5\n")); // wait 0 + warmup 5: batch 6 is traced
    CHECK_FALSE(has(r, "--data-parallel-size"));
    CHECK_FALSE(has(r, "--enable-expert-parallel"));
    CHECK_FALSE(has(r, "export VLLM_TORCH_PROFILER_DIR")); // v0.19 reads --profiler-config only
    // --profile skips --output-json (latency.py returns after the profiled batch): the timed pass
    // writes it, under nsys; the profiler pass has no nsys.
    CHECK(has(r,
              "profile_args=(--profile --profiler-config.profiler torch --profiler-config.torch_profiler_dir \"$RUN_DIR/traces\")\n"));
    CHECK(has(r, "timed_args=(--num-iters 10 --output-json \"$RUN_DIR/logs/bench.latency.json\")\n"));
    const auto preflight = r.script.find("ccl_preflight.py\" \\\n");
    const auto profile = r.script.find("\"${args[@]}\" \\\n    \"${profile_args[@]}\"\n");
    const auto timed = r.script.find("\"${args[@]}\" \\\n    \"${timed_args[@]}\"\n");
    REQUIRE(preflight != std::string::npos);
    REQUIRE(profile != std::string::npos);
    REQUIRE(timed != std::string::npos);
    CHECK(preflight < profile);
    CHECK(profile < timed);
    CHECK(r.script.find("nsys profile") > profile);
    CHECK(r.script.find(" --output-json \"") == r.script.rfind(" --output-json \""));
}

TEST_CASE("each card field that describes the vLLM run changes the render or is refused") {
    const std::string card = reference_card(k_vllm);
    SECTION("precision") {
        CHECK(has(render(with(card, "precision: bf16", "precision: fp16")), "    --dtype float16\n"));
        CHECK(has(render(with(card, "precision: bf16", "precision: fp32")), "    --dtype float32\n"));
        refused(render(with(card, "precision: bf16", "precision: fp8")), "workload.model.precision", "not supported for vllm");
    }
    SECTION("model") {
        CHECK(has(render(with(card, "hf_url: https://huggingface.co/Qwen/Qwen3-4B", "hf_url: https://huggingface.co/Qwen/Qwen3-8B")),
                  "    --model Qwen/Qwen3-8B\n"));
    }
    SECTION("lengths and batch") {
        const Rendered r = render(with(with(with(card, "input_len: 1024", "input_len: 2048"), "output_len: 128", "output_len: 64"),
                                       "batch_size: 8", "batch_size: 16"));
        CHECK(has(r, "    --input-len 2048\n"));
        CHECK(has(r, "    --output-len 64\n"));
        CHECK(has(r, "    --batch-size 16\n"));
    }
    SECTION("tensor and pipeline parallel") {
        const Rendered r = render(with(with(card, k_tp, "    tp: 2\n"), "    pp: 1\n", "    pp: 2\n"));
        CHECK(has(r, "    --tensor-parallel-size 2\n"));
        CHECK(has(r, "    --pipeline-parallel-size 2\n"));
    }
    SECTION("expert parallel is vLLM's switch over tp·dp") {
        const std::string moe = with(card, "moe: false", "moe: true");
        CHECK(has(render(with(moe, k_ep, "    ep: 4\n")), "    --enable-expert-parallel\n"));
        refused(render(with(moe, k_ep, "    ep: 2\n")), "model_plan_parallelization.ep", "tp·dp = 4");
        refused(render(with(card, k_ep, "    ep: 4\n")), "model_plan_parallelization.ep", "not MoE");
    }
    SECTION("data parallel is not one bench engine") {
        refused(render(with(with(card, k_tp, "    tp: 2\n"), "dp_replicate: 1", "dp_replicate: 2")),
                "model_plan_parallelization.dp_replicate", "one engine");
    }
    SECTION("profiling window") {
        CHECK(has(render(with(card, "warmup: 5", "warmup: 3")), "    --num-iters-warmup 3\n"));
        CHECK(has(render(with(card, "wait: 0", "wait: 2")), "    --num-iters-warmup 7\n"));
        refused(render(with(card, "active: 1", "active: 2")), "launch.profile.active", "exactly one batch");
    }
    SECTION("steps") { CHECK(has(render(with(card, "steps: 10", "steps: 20")), "--num-iters 20 --output-json")); }
    SECTION("phase") {
        refused(render(with(card, "phase: inference", "phase: training")), "workload.model.phase", "not supported for vllm");
    }
}

TEST_CASE("the SGLang reference card passes --strict, and ep > 1 on DeepSeek-MoE v1 is refused: it ignores --ep-size") {
    const std::string card = reference_card(k_sglang);
    const Rendered r = render(card);
    INFO(r.diagnostics.format());
    CHECK_FALSE(r.diagnostics.has_errors());
    refused(render(with(card, "    ep: 1 ", "    ep: 4 ")), "model_plan_parallelization.ep", "ignores --ep-size");
}

TEST_CASE("each card field that describes the SGLang run changes the render or is refused") {
    const std::string card = with(reference_card(k_sglang),
                                  "    ep: 1 # DeepSeek-MoE v1 in SGLang ignores --ep-size (docs/contracts/sglang-*.yaml)\n", k_ep);
    const Rendered base = render(card);
    INFO(base.diagnostics.format());
    REQUIRE_FALSE(base.diagnostics.has_errors());
    CHECK(has(base, "    --model-path deepseek-ai/deepseek-moe-16b-base\n"));
    CHECK(has(base, "    --dtype bfloat16\n"));
    CHECK(has(base, "    --tp-size 4\n"));
    CHECK_FALSE(has(base, "--ep-size"));
    // wait 0 + warmup 1, active 1: step 2 of the batch = decode step 0.
    CHECK(has(base, "--profile-stage decode\n    --profile-start-step 0 --profile-steps 1\n"));
    CHECK(base.plan.framework_config.at("torch_profiler_ranks") == "0");
    CHECK(base.script.find("--result-filename") < base.script.find("nsys profile"));

    SECTION("precision") {
        CHECK(has(render(with(card, "precision: bf16", "precision: fp16")), "    --dtype float16\n"));
        refused(render(with(card, "precision: bf16", "precision: int4")), "workload.model.precision", "not supported for sglang");
    }
    SECTION("lengths and batch") {
        const Rendered r = render(with(with(with(card, "input_len: 1024", "input_len: 512"), "output_len: 128", "output_len: 32"),
                                       "batch_size: 8", "batch_size: 4"));
        CHECK(has(r, "    --input-len 512\n"));
        CHECK(has(r, "    --output-len 32\n"));
        CHECK(has(r, "    --batch-size 4\n"));
    }
    SECTION("tensor parallel") {
        const std::string two = with(with(card, "total_count: 4", "total_count: 2"), "count_per_node: 4", "count_per_node: 2");
        CHECK(has(render(with(two, k_tp, "    tp: 2\n")), "    --tp-size 2\n"));
        refused(render(with(with(card, k_tp, "    tp: 2\n"), "    pp: 1\n", "    pp: 2\n")), "model_plan_parallelization.pp",
                "tp ranks only");
    }
    SECTION("expert parallel on a model that honours it") {
        const std::string other = with(with(card, "model_family: deepseek-moe-16b", "model_family: qwen3-30b-a3b"),
                                       "hf_url: https://huggingface.co/deepseek-ai/deepseek-moe-16b-base",
                                       "hf_url: https://huggingface.co/Qwen/Qwen3-30B-A3B");
        CHECK(has(render(with(other, k_ep, "    ep: 2\n")), "    --ep-size 2\n"));
        refused(render(with(other, k_ep, "    ep: 3\n")), "model_plan_parallelization.ep", "does not divide tp");
    }
    SECTION("profiling window") {
        CHECK(has(render(with(card, "warmup: 1", "warmup: 4")), "--profile-start-step 3 --profile-steps 1"));
        CHECK(has(render(with(card, "active: 1", "active: 3")), "--profile-start-step 0 --profile-steps 3"));
        CHECK(has(render(with(card, "warmup: 1", "warmup: 0")), "--profile-stage prefill\n"));
        refused(render(with(with(card, "warmup: 1", "warmup: 0"), "active: 1", "active: 2")), "launch.profile.active", "two files");
        refused(render(with(with(card, "warmup: 1", "warmup: 128"), "steps: 10", "steps: 200")), "launch.profile.warmup",
                "decode steps");
    }
}

TEST_CASE("a serving card without a launch.profile gets its benchmark's window and a problem with an unset launch value says where to "
          "set it") {
    const auto without_window = [](std::string card) {
        const auto start = card.find("  profile:\n");
        REQUIRE(start != std::string::npos);
        const auto end = card.find("\n  ", card.find("active:", start));
        return card.erase(start, end + 1 - start);
    };
    SECTION("vLLM: 5 warm-up batches, then the one --profile traces") {
        const Rendered r = render(without_window(reference_card(k_vllm)));
        INFO(r.diagnostics.format());
        REQUIRE_FALSE(r.diagnostics.has_errors());
        CHECK(r.plan.profile.wait == 0);
        CHECK(r.plan.profile.warmup == 5);
        CHECK(r.plan.profile.active == 1);
        CHECK_THAT(r.plan.origins.at("profile.active").detail, Catch::Contains("vllm bench latency's window"));
        CHECK(has(r, "    --num-iters-warmup 5\n"));
    }
    SECTION("SGLang: the prefill, then decode step 0") {
        const std::string card = with(without_window(reference_card(k_sglang)),
                                      "    ep: 1 # DeepSeek-MoE v1 in SGLang ignores --ep-size (docs/contracts/sglang-*.yaml)\n",
                                      k_ep);
        const Rendered r = render(card);
        INFO(r.diagnostics.format());
        REQUIRE_FALSE(r.diagnostics.has_errors());
        CHECK(r.plan.profile.active == 1);
        CHECK(has(r, "--profile-stage decode\n    --profile-start-step 0 --profile-steps 1\n"));
    }
    SECTION("a part the card gives is kept, the others are the benchmark's") {
        std::string card = without_window(reference_card(k_vllm));
        card.replace(card.find("  steps: 10\n"), 12, "  steps: 10\n  profile:\n    warmup: 2\n");
        const Rendered r = render(card);
        INFO(r.diagnostics.format());
        CHECK(r.plan.profile.warmup == 2);
        CHECK(r.plan.profile.active == 1);
        CHECK(has(r, "    --num-iters-warmup 2\n"));
    }
    SECTION("a problem with a launch value the card does not set says where to set it") {
        std::string card = reference_card(k_vllm);
        const auto account = card.find("  account: ");
        REQUIRE(account != std::string::npos);
        card.erase(account, card.find('\n', account) + 1 - account);
        CHECK_THAT(
            render(card).diagnostics.format(),
            Catch::Contains("(the card does not set launch.account: set it in its launch: section, or --set launch.account=VALUE)"));
        card = reference_card(k_vllm);
        card.replace(card.find("    active: 1\n"), 14, "    active: 2\n");
        const std::string text = render(card).diagnostics.format();
        CHECK_THAT(text, Catch::Contains("launch.profile.active: active 2"));
        CHECK_THAT(text, !Catch::Contains("the card does not set launch.profile.active"));
    }
}

namespace {
const char* k_vllm_serve = "workloads/mixtral-8x7b-vllm-serve-perlmutter/mixtral-8x7b-vllm-serve-perlmutter.yaml";
} // namespace

TEST_CASE("a serving vLLM card renders vllm serve and vllm bench serve, and says why") {
    const Rendered r = render(reference_card(k_vllm_serve));
    INFO(r.diagnostics.format());
    REQUIRE_FALSE(r.diagnostics.has_errors());
    CHECK(r.plan.framework_config.at("serve") == "true");
    CHECK(r.plan.origins.at("framework_config.serve").detail.find("workload.model.phase") != std::string::npos);
    CHECK(has(r, "serve_args=(\n    mistralai/Mixtral-8x7B-v0.1\n")); // model_tag, not --model
    CHECK(has(r, "    --data-parallel-size 4\n    --enable-expert-parallel\n"));
    CHECK(has(r, "    --max-num-seqs 32\n"));
    CHECK(has(r, "    --dataset-name random\n    --num-prompts 64\n    --request-rate 8\n"));
    CHECK(has(r, "    --random-input-len 1024\n    --random-output-len 128\n"));
    CHECK(has(r, "--result-filename bench_serve\"$suffix.json\""));
    CHECK(has(r, "serve_pass \"\" yes\n"));
    CHECK_FALSE(has(r, "vllm bench latency"));
    CHECK(r.script.find("--help-command \"vllm serve\"") < r.script.find("vllm serve \"${serve_args[@]}\""));
}

TEST_CASE("each card field that describes the vLLM server changes the render or is refused") {
    const std::string card = reference_card(k_vllm_serve);
    SECTION("a dataset only the serving bench reads picks serving for an inference card") {
        const std::string sharegpt = with(with(card, "phase: serving", "phase: inference"), "dataset: random",
                                          "dataset: ShareGPT_V3_unfiltered_cleaned_split");
        // vLLM's public ShareGPT file is fetched by the job into the shared cache, its sha256 kept...
        const Rendered fetched = render(sharegpt);
        INFO(fetched.diagnostics.format());
        CHECK_FALSE(fetched.diagnostics.has_errors());
        CHECK(has(fetched, "dataset_url=https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/"
                           "ShareGPT_V3_unfiltered_cleaned_split.json\n"));
        CHECK(has(fetched, "dataset_path=\"$dataset_cache/\"ShareGPT_V3_unfiltered_cleaned_split.json\n"));
        CHECK(has(fetched, "sha256sum \"$dataset_path\" >\"$RUN_DIR/logs/dataset.sha256\"\n"));
        // ...a ShareGPT file of one's own must be named.
        refused(render(with(sharegpt, "ShareGPT_V3_unfiltered_cleaned_split", "sharegpt_filtered_mine")), "launch.dataset_path",
                "--dataset-path");
        const Rendered r = render(with(sharegpt, "  args:\n", "  dataset_path: /data/sharegpt.json\n  args:\n"));
        INFO(r.diagnostics.format());
        CHECK(has(r, "    --dataset-name sharegpt\n"));
        CHECK(has(r, "dataset_path=/data/sharegpt.json\n"));
        CHECK_FALSE(has(r, "dataset_url="));
        CHECK(has(r, "output_len_option=--sharegpt-output-len\n"));
        CHECK(has(r, "bench_args+=(\"$output_len_option\" 128)\n"));
        CHECK(r.plan.origins.at("framework_config.serve").detail.find("workload.data.dataset") != std::string::npos);
    }
    SECTION("c4, which no serving loader reads") {
        refused(render(with(card, "dataset: random", "dataset: c4")), "workload.data.dataset", "not a dataset vllm bench serve reads");
    }
    SECTION("wikitext: WikiText-2's test rows as custom prompts, written by the job (group 9's run_script.py)") {
        const Rendered r = render(with(card, "dataset: random", "dataset: wikitext"));
        INFO(r.diagnostics.format());
        REQUIRE_FALSE(r.diagnostics.has_errors());
        CHECK(has(r, "    --dataset-name custom\n"));
        CHECK(has(r, "hf_config=wikitext-2-raw-v1\n"));
        CHECK(has(r, "dataset_path=\"$dataset_cache/\"wikitext-2-raw-v1-test-prompts.jsonl\n"));
        CHECK(has(r, "--split test --key prompt --strip --min-chars 21"));
        CHECK(has(r, "output_len_option=--custom-output-len\n"));
        CHECK_FALSE(has(r, "--random-input-len"));
        // A size the card names is the one served.
        CHECK(has(render(with(card, "dataset: random", "dataset: wikitext-103")), "hf_config=wikitext-103-raw-v1\n"));
    }
    SECTION("defaults for the client, with their reasons") {
        const Rendered r = render(with(with(card, "    num_prompts: 64\n", ""), "    request_rate: 8\n", ""));
        CHECK(has(r, "    --num-prompts 1000\n    --request-rate inf\n"));
        CHECK(r.plan.origins.at("framework_config.num_prompts").detail.find("default=1000") != std::string::npos);
    }
    SECTION("expert parallelism is tp x dp or nothing") {
        refused(render(with(card, "    ep: 4", "    ep: 2")), "model_plan_parallelization.ep", "tp·dp = 4");
    }
    SECTION("both tracers: two servers, one after the other") {
        const Rendered r = render(
            with(card, "    - json\n  metrics_specific_trace", "    - json\n    - nsys\n  metrics_specific_trace"));
        CHECK(has(r, "serve_pass _profile yes\nserve_pass \"\" no \"${nsys_profiler[@]}\"\n"));
    }
}
