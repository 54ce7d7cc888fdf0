// Card -> TorchTitan fidelity: every card field that describes the run changes the rendered
// train.toml / launch.sbatch the way TorchTitan v0.2.2 reads it, or fails --strict naming the field.
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

const char* k_llama = "workloads/llama-3.1-8b-torchtitan-perlmutter/llama-3.1-8b-torchtitan-perlmutter.yaml";

struct Rendered {
    Plan plan;
    Diagnostics diagnostics;
    std::string toml;
    std::string sbatch;
};

Rendered render_card(const std::vector<std::string>& sets, bool strict = false) {
    const ReferenceRender r = render_reference(reference_card_text(k_llama), sets, "perlmutter", strict);
    return {r.plan, r.diagnostics, r.file("train.toml"), r.file("launch.sbatch")};
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

} // namespace

TEST_CASE("the llama reference card renders TorchTitan's own names and window") {
    const Rendered base = render_card({}, true);
    INFO(base.diagnostics.format());
    CHECK_FALSE(base.diagnostics.has_errors());
    CHECK(has(base.toml, "name = \"llama3\"\nflavor = \"8B\"\n"));
    CHECK(has(base.toml, "mixed_precision_param = \"bfloat16\""));
    CHECK(has(base.toml, "dataset = \"c4_test\""));
    // launch.profile wait 3 + warmup 2, active 5 -> steps 6..10: profile_freq 10, warmup 2.
    CHECK(has(base.toml, "profile_freq = 10\nprofiler_warmup = 2\nprofiler_active = 5\n"));
    CHECK(has(base.toml, "enable_profiling = true"));
    // torch.profiler and nsys never share a process: two passes, the nsys one with profiling off.
    CHECK(has(base.sbatch, "-m torchtitan.train \"${args[@]}\" --job.dump_folder \"$RUN_DIR\"\n"));
    CHECK(has(base.sbatch, "--job.dump_folder \"$RUN_DIR/nsys_pass\" --profiling.no-enable-profiling"));
    CHECK(base.plan.framework_config.at("nsys_pass") == "true");
    CHECK(has(base.plan.origins.at("framework_config.nsys_pass").detail, "CUPTI allows one subscriber"));
    CHECK_FALSE(has(base.sbatch, "--model.name"));
}

TEST_CASE("each card field drives the rendered TorchTitan config") {
    struct Row {
        const char* field;
        std::vector<std::string> sets;
        const char* file; // "toml" or "sbatch"
        std::vector<std::string> expect;
        std::vector<std::string> absent;
    };
    const std::vector<Row> rows = {
        {"model family",
         {"workload.model.model_family=qwen3-4b", "hf_url=https://huggingface.co/Qwen/Qwen3-4B",
          "workload.model.model_arch.num_params=4022468096"},
         "toml",
         {"name = \"qwen3\"\nflavor = \"4B\"\n", "hf_assets_path = \"Qwen/Qwen3-4B\""},
         {"llama3"}},
        {"model by Hugging Face id",
         {"workload.model.model_family=llama3-70b", "hf_url=https://huggingface.co/meta-llama/Llama-3.1-70B",
          "workload.model.model_arch.num_params=70553706496"},
         "toml",
         {"name = \"llama3\"\nflavor = \"70B\"\n"},
         {"\"8B\""}},
        {"DeepSeek-V3 16B as the corpus spells it",
         {"workload.model.model_family=deepseek_v3_16b", "hf_url=https://huggingface.co/deepseek-ai/deepseek-moe-16b-base",
          "workload.model.model_arch.num_params=16380544000"},
         "toml",
         {"name = \"deepseek_v3\"\nflavor = \"16B\"\n"},
         {"671B"}},
        {"DeepSeek-V3 16B by its checkpoint",
         {"workload.model.model_family=DeepSeek-V3-16B", "hf_url=https://huggingface.co/deepseek-ai/deepseek-moe-16b-base",
          "workload.model.model_arch.num_params=16380544000"},
         "toml",
         {"flavor = \"16B\"\n"},
         {"671B"}},
        {"MoE model",
         {"workload.model.model_family=qwen3-30b-a3b", "hf_url=https://huggingface.co/Qwen/Qwen3-30B-A3B",
          "workload.model.model_arch.num_params=30532122624"},
         "toml",
         {"flavor = \"30B-A3B\""},
         {}},
        {"precision", {"workload.model.precision=fp32"}, "toml", {"mixed_precision_param = \"float32\""}, {"bfloat16"}},
        {"dataset", {"workload.data.dataset=c4"}, "toml", {"dataset = \"c4\"\n"}, {"c4_test\""}},
        {"batch", {"workload.data.batch_size=32"}, "toml", {"local_batch_size = 8\nglobal_batch_size = 32\n"}, {}},
        {"sequence", {"workload.data.seq_len=4096"}, "toml", {"seq_len = 4096"}, {"seq_len = 2048"}},
        {"steps", {"launch.steps=12"}, "toml", {"steps = 12\n"}, {"steps = 10\n"}},
        {"tp",
         {"Model-executor.model_plan_parallelization.tp=2", "Model-executor.model_plan_parallelization.dp_shard=8"},
         "toml",
         {"data_parallel_shard_degree = 8", "tensor_parallel_degree = 2"},
         {}},
        {"dp_replicate",
         {"Model-executor.model_plan_parallelization.dp_replicate=2", "Model-executor.model_plan_parallelization.dp_shard=2"},
         "toml",
         {"data_parallel_replicate_degree = 2", "data_parallel_shard_degree = 2"},
         {}},
        {"pp",
         {"Model-executor.model_plan_parallelization.pp=2", "Model-executor.model_plan_parallelization.tp=2"},
         "toml",
         {"pipeline_parallel_degree = 2"},
         {}},
        {"cp",
         {"Model-executor.model_plan_parallelization.cp=2", "Model-executor.model_plan_parallelization.tp=2"},
         "toml",
         {"context_parallel_degree = 2"},
         {}},
        {"ep", {"Model-executor.model_plan_parallelization.ep=2"}, "toml", {"expert_parallel_degree = 2"}, {}},
        {"pp_mb", {"Model-executor.model_plan_parallelization.pp_mb=2"}, "toml", {"pipeline_parallel_microbatch_size = 2"}, {}},
        {"window",
         {"launch.profile.wait=1", "launch.profile.warmup=3", "launch.profile.active=4"},
         "toml",
         {"profile_freq = 8\nprofiler_warmup = 3\nprofiler_active = 4\n"},
         {}},
        {"torch.profiler only", {"metric_source.traces=[json]"}, "sbatch", {"-m torchtitan.train"}, {"nsys profile"}},
        {"nsys only",
         {"metric_source.traces=[nsys]"},
         "sbatch",
         {"nsys profile", "--profiling.no-enable-profiling"},
         {"--job.dump_folder \"$RUN_DIR\"\n"}},
        {"nsys only: profiling off in the config", {"metric_source.traces=[nsys]"}, "toml", {"enable_profiling = false"}, {}},
        {"node count",
         {"workload.hardware.xpu_spec.total_count=8", "Model-executor.model_plan_parallelization.dp_shard=2"},
         "sbatch",
         {"--nnodes=2"},
         {"--nnodes=4"}},
    };
    const Rendered base = render_card({});
    for (const Row& row : rows) {
        SECTION(row.field) {
            const Rendered variant = render_card(row.sets, true);
            INFO(variant.diagnostics.format());
            CHECK_FALSE(variant.diagnostics.has_errors());
            const std::string& text = std::string(row.file) == "toml" ? variant.toml : variant.sbatch;
            const std::string& before = std::string(row.file) == "toml" ? base.toml : base.sbatch;
            CHECK(text != before);
            for (const std::string& needle : row.expect) {
                INFO(text);
                CHECK(has(text, needle));
            }
            for (const std::string& needle : row.absent) {
                CHECK_FALSE(has(text, needle));
            }
        }
    }
}

TEST_CASE("values TorchTitan cannot honour fail --strict naming the field") {
    struct Row {
        const char* what;
        std::vector<std::string> sets;
        std::string message;
    };
    const std::vector<Row> rows = {
        {"model",
         {"workload.model.model_family=gpt-2", "hf_url=https://huggingface.co/openai-community/gpt2"},
         "workload.model.model_family: \"gpt-2\" is not supported for torchtitan"},
        {"precision", {"workload.model.precision=fp16"}, "workload.model.precision: fp16 is not supported for torchtitan"},
        {"a size the model's flavor is not",
         {"workload.model.model_family=deepseek-v3", "hf_url=https://huggingface.co/deepseek-ai/deepseek-moe-16b-base",
          "workload.model.model_arch.num_params=16380544000"},
         "num_params: 16380544000 parameters is not TorchTitan's deepseek_v3 flavor 671B"},
        {"fp8", {"workload.model.precision=fp8"}, "workload.model.precision: fp8 is not supported for torchtitan"},
        {"dataset", {"workload.data.dataset=wikitext"}, "workload.data.dataset: \"wikitext\" is not supported for torchtitan"},
        {"phase", {"workload.model.phase=inference"}, "workload.model.phase: inference is not supported for torchtitan"},
        {"steps past the window's cycle", {"launch.steps=15"}, "launch.steps: 15 steps reach TorchTitan's next profiling cycle"},
        {"ep outside dp_shard·cp·tp",
         {"Model-executor.model_plan_parallelization.ep=3"},
         "Model-executor.model_plan_parallelization.ep: ep 3 does not divide"},
        {"ep over dp_replicate",
         {"Model-executor.model_plan_parallelization.dp_replicate=2", "Model-executor.model_plan_parallelization.dp_shard=2",
          "Model-executor.model_plan_parallelization.ep=16"},
         "dp_shard·cp·tp = 2·1·4 = 8"},
    };
    for (const Row& row : rows) {
        SECTION(row.what) {
            const Rendered variant = render_card(row.sets, true);
            INFO(variant.diagnostics.format());
            CHECK(variant.diagnostics.has_errors());
            CHECK(has(variant.diagnostics.format(), row.message));
        }
    }
    SECTION("the longest clean run is accepted") { CHECK_FALSE(render_card({"launch.steps=14"}, true).diagnostics.has_errors()); }
}
