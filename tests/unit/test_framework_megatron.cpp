// Card -> Megatron-LM fidelity: every card field that describes the run changes the rendered
// launch.sbatch the way Megatron-LM core_v0.15.3 reads it (docs/contracts/megatron-lm-core_v0.15.3.yaml),
// or fails --strict naming the field.
#include "plan/frameworks/framework_plan.hpp"
#include "reference_render.hpp"
#include "render/render.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace harness;
using namespace harness::test;

namespace {

const char* k_deepseek = "workloads/deepseek-v3-16b-megatron-perlmutter/deepseek-v3-16b-megatron-perlmutter.yaml";

struct Rendered {
    Plan plan;
    Diagnostics diagnostics;
    std::string sbatch;
};

Rendered render_card(const std::vector<std::string>& sets, bool strict = false) {
    const ReferenceRender r = render_reference(reference_card_text(k_deepseek), sets, "perlmutter", strict);
    return {r.plan, r.diagnostics, r.file("launch.sbatch")};
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

const std::string k_par = "Model-executor.model_plan_parallelization.";

} // namespace

TEST_CASE("the deepseek reference card renders Megatron's own window, precision and micro-batch") {
    const Rendered base = render_card({}, true);
    INFO(base.diagnostics.format());
    CHECK_FALSE(base.diagnostics.has_errors());
    // launch.profile wait 3 + warmup 2, active 5 -> iterations 6..10: Megatron's schedule records
    // ProfilerStep#S..#E-1 and saves when iteration E starts, so S 6, E 11, 11 iterations.
    CHECK(has(base.sbatch, "--profile-step-start 6\n"));
    CHECK(has(base.sbatch, "--profile-step-end 11\n"));
    CHECK(has(base.sbatch, "--train-iters 11\n"));
    CHECK(has(base.plan.origins.at("framework_config.train_iters").detail, "launch.steps 10 + 1"));
    CHECK(has(base.sbatch, "--profile-ranks \"${ranks[@]}\""));
    CHECK(has(base.sbatch, "--tensorboard-dir \"$RUN_DIR/traces\""));
    CHECK(has(base.sbatch, "    --bf16\n"));
    CHECK_FALSE(has(base.sbatch, "--fp16"));
    CHECK(has(base.sbatch, "--mock-data\n"));
    // plan.json's micro-batch is the one the script passes: the card's pp_mb, not global / dp.
    CHECK(base.plan.micro_batch_size == 1);
    CHECK(has(base.sbatch, "--micro-batch-size 1\n"));
    CHECK(has(base.sbatch, "--global-batch-size 64\n"));
    CHECK(base.plan.framework_config.at("num_microbatches") == "8");
}

TEST_CASE("each card field drives the rendered Megatron command line") {
    struct Row {
        const char* field;
        std::vector<std::string> sets;
        std::vector<std::string> expect;
        std::vector<std::string> absent;
    };
    const std::vector<Row> rows = {
        {"precision fp32", {"workload.model.precision=fp32"}, {}, {"--bf16", "--fp16"}},
        {"precision fp16 (no expert parallelism)", {"workload.model.precision=fp16", k_par + "ep=1"}, {"    --fp16\n"}, {"--bf16"}},
        {"global batch", {"workload.data.batch_size=128"}, {"--global-batch-size 128\n"}, {"--global-batch-size 64\n"}},
        {"micro-batch", {k_par + "pp_mb=2"}, {"--micro-batch-size 2\n"}, {"--micro-batch-size 1\n"}},
        {"sequence",
         {"workload.data.seq_len=4096"},
         {"--seq-length 4096\n", "--max-position-embeddings 4096\n"},
         {"--seq-length 2048"}},
        {"steps past the window", {"launch.steps=14"}, {"--train-iters 14\n", "--profile-step-end 11\n"}, {"--train-iters 11"}},
        {"tp",
         {k_par + "tp=4", k_par + "dp_replicate=4", k_par + "ep=4"},
         {"--tensor-model-parallel-size 4\n"},
         {"--tensor-model-parallel-size 2"}},
        {"pp", {k_par + "pp=2", k_par + "dp_replicate=4", k_par + "ep=4"}, {"--pipeline-model-parallel-size 2\n"}, {}},
        {"cp", {k_par + "cp=2", k_par + "dp_replicate=4"}, {"--context-parallel-size 2\n"}, {}},
        {"ep", {k_par + "ep=4"}, {"--expert-model-parallel-size 4\n"}, {"--expert-model-parallel-size 8"}},
        {"window",
         {"launch.profile.wait=1", "launch.profile.warmup=1", "launch.profile.active=3"},
         {"--profile-step-start 3\n", "--profile-step-end 6\n", "--train-iters 10\n"},
         {}},
        {"nsys only: the cudaProfilerApi range, S = W, E = W + A",
         {"metric_source.traces=[nsys]"},
         {"--capture-range=cudaProfilerApi", "--profile-step-start 5\n", "--profile-step-end 10\n", "--train-iters 10\n"},
         {"--use-pytorch-profiler"}},
        {"node count", {"workload.hardware.xpu_spec.total_count=32", k_par + "dp_replicate=16"}, {"--nnodes=8"}, {"--nnodes=4"}},
    };
    const Rendered base = render_card({});
    for (const Row& row : rows) {
        SECTION(row.field) {
            const Rendered variant = render_card(row.sets, true);
            INFO(variant.diagnostics.format());
            CHECK_FALSE(variant.diagnostics.has_errors());
            CHECK(variant.sbatch != base.sbatch);
            INFO(variant.sbatch);
            for (const std::string& needle : row.expect) {
                CHECK(has(variant.sbatch, needle));
            }
            for (const std::string& needle : row.absent) {
                CHECK_FALSE(has(variant.sbatch, needle));
            }
        }
    }
    SECTION("a preprocessed prefix is read with the model's tokenizer") {
        const Rendered variant = render_card(
            {"workload.data.dataset=wikitext", "launch.dataset_path=/scratch/data/wikitext_text_document"}, true);
        INFO(variant.diagnostics.format());
        REQUIRE_FALSE(variant.diagnostics.has_errors());
        const std::string& script = variant.sbatch;
        CHECK(has(script, "--data-path /scratch/data/wikitext_text_document\n"));
        CHECK(has(script, "--tokenizer-type HuggingFaceTokenizer\n"));
        CHECK(has(script, "--tokenizer-model deepseek-ai/deepseek-moe-16b-base\n"));
        CHECK(has(script, "container_volumes=(\"$data_dir:$data_dir:ro\")"));
        CHECK_FALSE(has(script, "    --mock-data\n"));
    }
    SECTION("WikiText without a prefix is preprocessed by the job, in each spelling the corpus writes") {
        struct Spelling {
            const char* dataset;
            const char* config;
        };
        for (const Spelling& row : {Spelling{"wikitext", "wikitext-103-raw-v1"}, Spelling{"WikiText_103", "wikitext-103-raw-v1"},
                                    Spelling{"wikitext-2", "wikitext-2-raw-v1"}, Spelling{"Salesforce/wikitext-2-v1", "wikitext-2-v1"},
                                    Spelling{"wikitext/wikitext-103-raw-v1", "wikitext-103-raw-v1"}}) {
            INFO(row.dataset);
            const Rendered variant = render_card({std::string("workload.data.dataset=") + row.dataset}, true);
            INFO(variant.diagnostics.format());
            REQUIRE_FALSE(variant.diagnostics.has_errors());
            CHECK(variant.plan.framework_config.at("hf_dataset_config") == row.config);
            const std::string& script = variant.sbatch;
            CHECK(has(script, std::string("hf_config=") + row.config + "\n"));
            CHECK(has(script, "python3 tools/preprocess_data.py --input"));
            CHECK(has(script, "--data-path \"$data_prefix\"\n"));
            CHECK(has(script, "--tokenizer-model deepseek-ai/deepseek-moe-16b-base\n"));
            CHECK_FALSE(has(script, "    --mock-data\n"));
        }
        // A tokenized copy per tokenizer: two models never share one.
        const Rendered llama = render_card({"workload.data.dataset=wikitext", "launch.model=meta-llama/Llama-3.1-8B"}, false);
        CHECK(llama.plan.framework_config.at("data_cache") ==
              "ccl-harness/megatron-data/wikitext-103-raw-v1-meta-llama--Llama-3.1-8B");
    }
    SECTION("a dataset name that only looks like WikiText is not preprocessed") {
        for (const char* name : {"wikitext-3", "wikitexts", "my-wikitext"}) {
            INFO(name);
            CHECK(has(render_card({std::string("workload.data.dataset=") + name}, true).diagnostics.format(),
                      "launch.dataset_path: not set"));
        }
    }
    SECTION("mock and absent datasets are synthetic tokens") {
        CHECK_FALSE(render_card({"workload.data.dataset=mock"}, true).diagnostics.has_errors());
        CHECK_FALSE(render_card({"workload.data.dataset="}, true).diagnostics.has_errors());
    }
    SECTION("plan.json's micro-batch follows pp_mb") { CHECK(render_card({k_par + "pp_mb=2"}, true).plan.micro_batch_size == 2); }
}

TEST_CASE("values Megatron-LM cannot honour fail --strict naming the field") {
    struct Row {
        const char* what;
        std::vector<std::string> sets;
        std::string message;
    };
    const std::vector<Row> rows = {
        {"precision", {"workload.model.precision=fp8"}, "workload.model.precision: fp8 is not supported for megatron-lm"},
        {"tf32", {"workload.model.precision=tf32"}, "workload.model.precision: tf32 is not supported for megatron-lm"},
        {"fp16 with experts", {"workload.model.precision=fp16"}, "fp16 is not supported for megatron-lm with expert parallelism"},
        {"real text the job cannot preprocess, without its preprocessed prefix",
         {"workload.data.dataset=c4"},
         "launch.dataset_path: not set: megatron-lm reads dataset \"c4\" only preprocessed"},
        {"a prefix beside synthetic tokens",
         {"workload.data.dataset=mock", "launch.dataset_path=/scratch/wikitext_text_document"},
         "launch.dataset_path: set, but workload.data.dataset \"mock\" is synthetic tokens (--mock-data)"},
        {"phase", {"workload.model.phase=inference"}, "workload.model.phase: inference is not supported for megatron-lm"},
        {"batch not a multiple of micro × dp",
         {"workload.data.batch_size=60"},
         "workload.data.batch_size: global batch 60 is not divisible by micro-batch (pp_mb) 1 × data parallelism 8"},
        {"micro-batch not dividing", {k_par + "pp_mb=3"}, "micro-batch (pp_mb) 3 × data parallelism 8"},
        {"etp·ep·pp over the world",
         {k_par + "ep=16"},
         k_par + "ep: expert tensor parallel 2 × ep 16 × pp 1 = 32 does not divide the world size 16"},
        {"experts not a multiple of ep",
         {k_par + "ep=8", "workload.hardware.xpu_spec.total_count=48", k_par + "dp_replicate=24", "launch.args=[--num-experts=60]"},
         k_par + "ep: 60 experts are not a multiple of ep 8"},
        {"expert tensor parallel from launch.args",
         {"launch.args=[--num-experts=64, --expert-tensor-parallel-size=4]"},
         "expert tensor parallel 4 × ep 8 × pp 1 = 32 does not divide the world size 16"},
        {"layers over pp",
         {k_par + "pp=3", k_par + "dp_replicate=8", "workload.hardware.xpu_spec.total_count=48"},
         k_par + "pp: 28 layers are not divisible by pp 3"},
        {"seq over cp",
         {k_par + "cp=2", k_par + "dp_replicate=4", "workload.data.seq_len=2050"},
         "workload.data.seq_len: seq_len 2050 is not a multiple of 2 × cp 2"},
        {"dp_shard",
         {k_par + "dp_shard=2", k_par + "dp_replicate=4"},
         k_par + "dp_shard: dp_shard 2 is not supported for megatron-lm"},
        {"launch.args overriding a card field",
         {"launch.args=[--num-experts=64, --tensor-model-parallel-size=4]"},
         "launch.args: --tensor-model-parallel-size is rendered from Model-executor.model_plan_parallelization.tp"},
    };
    for (const Row& row : rows) {
        SECTION(row.what) {
            const Rendered variant = render_card(row.sets, true);
            INFO(variant.diagnostics.format());
            CHECK(variant.diagnostics.has_errors());
            CHECK(has(variant.diagnostics.format(), row.message));
        }
    }
}
