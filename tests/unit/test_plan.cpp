#include "card_fixture.hpp"
#include "plan/plan.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::card_with;
using harness::test::k_card;

namespace {

WorkloadCard parse(const std::string& text) { return WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml")); }

fs::path shipped_clusters() { return harness_home() / "clusters"; }

ClusterProfile cluster(const std::string& name) { return ClusterProfile::load(shipped_clusters(), name); }

Diagnostics strict_plan(const std::string& text, const std::string& target = "perlmutter", Plan* out = nullptr) {
    const WorkloadCard card = parse(text);
    REQUIRE_FALSE(card.diagnostics().has_errors());
    Diagnostics diagnostics;
    Plan plan = make_plan(card, cluster(target), true, diagnostics);
    if (out != nullptr) {
        *out = plan;
    }
    return diagnostics;
}

bool mentions(const Diagnostics& diagnostics, const std::string& text) { return diagnostics.format().find(text) != std::string::npos; }

} // namespace

TEST_CASE("a consistent card plans whole Perlmutter nodes") {
    Plan plan;
    // iteration 20 would reach TorchTitan's second profiling cycle (it repeats every wait+warmup+active
    // steps): the run stops before it.
    const Diagnostics diagnostics = strict_plan(card_with("  account: m4999\n", "  account: m4999\n  steps: 16\n"), "perlmutter",
                                                &plan);
    INFO(diagnostics.format());
    CHECK_FALSE(diagnostics.has_errors());
    CHECK(plan.nodes == 4);
    CHECK(plan.ranks_per_node == 4);
    CHECK(plan.tasks_per_node == 1);
    CHECK(plan.micro_batch_size == 4);
    CHECK(plan.constraint == "gpu");
    CHECK(plan.qos == "regular");
    CHECK(plan.model == "meta-llama/Llama-3.1-8B");
    CHECK(plan.trace_kinds == std::vector<std::string>{"torch_profiler"});
    // Cluster defaults first, then the card's communication env.
    CHECK(plan.env.front().first == "NCCL_NET");
    CHECK(plan.env.back() == std::pair<std::string, std::string>{"NCCL_DEBUG", "INFO"});
}

TEST_CASE("strict planning rejects inconsistent parallelism") {
    SECTION("product differs from total_count") {
        CHECK(mentions(strict_plan(card_with("    tp: 4", "    tp: 2")),
                       "tp·pp·cp·dp_replicate·dp_shard = 2·1·1·1·4 = 8, but total_count is 16"));
    }
    SECTION("total_count is not whole nodes") {
        const std::string text = card_with("total_count: 16", "total_count: 6");
        CHECK(mentions(strict_plan(text), "total_count 6 is not a multiple of count_per_node 4"));
    }
    SECTION("ep must divide dp x tp") {
        CHECK(mentions(strict_plan(card_with("    cp: 1", "    cp: 1\n    ep: 3")),
                       "ep 3 does not divide the data-parallel × tensor group"));
    }
    SECTION("batch must divide across data-parallel ranks") {
        CHECK(mentions(strict_plan(card_with("batch_size: 16", "batch_size: 6")),
                       "global batch 6 is not divisible by data parallelism 4"));
    }
    SECTION("the accelerator must match the target") {
        CHECK(mentions(strict_plan(card_with("model: nvidia_a100", "model: tpu_v6e")),
                       "\"tpu_v6e\" does not run on cluster \"perlmutter\""));
    }
    SECTION("containers must be pinned by digest") {
        CHECK(mentions(strict_plan(card_with("pytorch@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                             "pytorch:24.01-py3")),
                       "is not pinned by digest"));
    }
    SECTION("Perlmutter needs an account") { CHECK(mentions(strict_plan(card_with("  account: m4999\n", "")), "launch.account")); }
}

TEST_CASE("without --strict the same problems are warnings") {
    const WorkloadCard card = parse(card_with("    tp: 4", "    tp: 2"));
    Diagnostics diagnostics;
    make_plan(card, cluster("perlmutter"), false, diagnostics);
    CHECK_FALSE(diagnostics.has_errors());
    CHECK(mentions(diagnostics, "(an error with --strict)"));
}

TEST_CASE("80 GB cards get the hbm80g constraint") {
    Plan plan;
    strict_plan(card_with("      count_per_node: 4", "      count_per_node: 4\n      memory_gb: 80"), "perlmutter", &plan);
    CHECK(plan.constraint == "gpu&hbm80g");
}

TEST_CASE("TPU slices map to hosts and chips") {
    std::string tpu = card_with("model: nvidia_a100", "model: tpu_v6e");
    tpu = tpu.replace(tpu.find("  account: m4999"), 16, "  tpu: {project: p}\n  cluster: tpu-v6e");
    const auto plan_for = [&](int chips, int per_node, Plan& plan) {
        std::string text = tpu;
        text.replace(text.find("total_count: 16"), 15, "total_count: " + std::to_string(chips));
        text.replace(text.find("count_per_node: 4"), 17, "count_per_node: " + std::to_string(per_node));
        text.replace(text.find("    dp_shard: 4"), 15, "    dp_shard: " + std::to_string(chips / 4));
        text.replace(text.find("batch_size: 16"), 14, "batch_size: " + std::to_string(chips));
        return strict_plan(text, "tpu-v6e", &plan);
    };
    Plan plan;
    CHECK_FALSE(plan_for(16, 4, plan).has_errors());
    CHECK(plan.tpu_accelerator_type == "v6e-16");
    CHECK(plan.tpu_topology == "4x4");
    CHECK(plan.tpu_hosts == 4);
    CHECK(plan.tpu_chips_per_host == 4);
    CHECK(plan.trace_kinds == std::vector<std::string>{"xplane"});
    CHECK_FALSE(plan_for(4, 8, plan).has_errors());
    CHECK(plan.tpu_hosts == 1);
    CHECK(plan.tpu_chips_per_host == 4);
    CHECK(mentions(plan_for(12, 4, plan), "there is no v6e-12 slice"));
}

TEST_CASE("framework names are normalized") {
    CHECK(normalize_framework("torchtitan-0.1.0") == "torchtitan");
    CHECK(normalize_framework("Megatron_LM") == "megatron-lm");
    CHECK(normalize_framework("vLLM") == "vllm");
    CHECK(normalize_framework("torchxla") == "torchxla");
}

TEST_CASE("the target comes from launch.cluster, else the accelerator") {
    CHECK(infer_target(parse(k_card), shipped_clusters()) == "perlmutter");
    CHECK(infer_target(parse(card_with("model: nvidia_a100", "model: tpu_v6e")), shipped_clusters()) == "tpu-v6e");
    CHECK(infer_target(parse(std::string(k_card) + "  cluster: slurm-local\n"), shipped_clusters()) == "slurm-local");
    CHECK_THROWS_WITH(infer_target(parse(card_with("model: nvidia_a100", "model: nvidia_dgx_spark")), shipped_clusters()),
                      Catch::Contains("pass --cluster NAME"));
}

TEST_CASE("unknown clusters list the known ones") {
    CHECK_THROWS_WITH(cluster("perlmuter"), Catch::Contains("did you mean \"perlmutter\"?") && Catch::Contains("slurm-local"));
}

namespace {

// A vLLM serving card as the corpus writes them (the Mixtral EP and qwen3-4b tp 2 rows): one
// Perlmutter node of 4 GPUs, with the degrees the contributor gave.
std::string vllm_card(int tp, int ep, bool moe) {
    const std::string degrees = "    dp_replicate: 1\n    dp_shard: 1\n    tp: " + std::to_string(tp) +
                                "\n    pp: 1\n    cp: 1\n    ep: " + std::to_string(ep);
    return std::string(R"(version: 1
hf_url: https://huggingface.co/mistralai/Mixtral-8x7B-v0.1
workload:
  model:
    phase: inference
    moe: )") +
           (moe ? "true" : "false") + R"(
    model_family: mixtral-8x7b
    precision: bf16
    granularity: model_fwd
  data:
    batch_size: 32
    seq_len: 1024
    input_len: 1024
    output_len: 128
    dataset: random
  hardware:
    xpu_spec:
      type: GPU
      model: nvidia_a100
      total_count: 4
      count_per_node: 4
    driver_version: cuda_12.9
Model-executor:
  framework:
    name: vllm
  model_plan_parallelization:
)" + degrees +
           R"(
launch:
  account: m4999
  container:
    image: docker.io/vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
)";
}

} // namespace

TEST_CASE("a loose card is read as its contributor ran it, with a warning") {
    SECTION("vLLM ep = N·tp and no dp: N data-parallel engines") {
        Plan plan;
        // Served, as the Mixtral EP rows were: the offline bench runs one engine.
        std::string text = vllm_card(1, 4, true);
        text.replace(text.find("phase: inference"), 16, "phase: serving");
        const Diagnostics diagnostics = strict_plan(text, "perlmutter", &plan);
        INFO(diagnostics.format());
        CHECK_FALSE(diagnostics.has_errors());
        CHECK(plan.parallelism.dp_replicate == 4);
        CHECK(plan.world_size == 4);
        CHECK(mentions(diagnostics, "card.yaml:32:9: Model-executor.model_plan_parallelization.ep: ep 4 with tp 1 and no dp"));
        CHECK(mentions(diagnostics, "--data-parallel-size 4 --enable-expert-parallel"));
        CHECK(plan.origins.at("parallelism.dp_replicate").detail.find("ep 4 / tp 1") != std::string::npos);
    }
    SECTION("fewer ranks than one node's GPUs: part of the node") {
        Plan plan;
        const Diagnostics diagnostics = strict_plan(vllm_card(2, 1, false), "perlmutter", &plan);
        INFO(diagnostics.format());
        CHECK_FALSE(diagnostics.has_errors());
        CHECK(plan.world_size == 2);
        CHECK(plan.ranks_per_node == 2);
        CHECK(plan.nodes == 1);
        CHECK(mentions(diagnostics, "card.yaml:20:20: workload.hardware.xpu_spec.total_count: total_count 4, but"));
        CHECK(mentions(diagnostics, "the run uses 2 of the node's 4 accelerators"));
    }
    SECTION("what still contradicts itself is refused") {
        // More ranks than GPUs.
        CHECK(mentions(strict_plan(vllm_card(8, 1, false)), "= 8, but total_count is 4"));
        // ep that no dp makes whole: ep 3 over tp 1 would be 3 engines on 4 GPUs.
        const Diagnostics odd = strict_plan(vllm_card(1, 3, true));
        CHECK(odd.has_errors());
        CHECK_FALSE(mentions(odd, "--data-parallel-size 3"));
        // Part of several nodes is not one node's spare GPUs.
        CHECK(mentions(strict_plan(card_with("    tp: 4", "    tp: 2")), "= 8, but total_count is 16"));
    }
}

TEST_CASE("a TPU card read as its contributor ran it") {
    // The group-4 rows: vLLM on 2 chips of a v6e-8 VM, "dataset: custom" with no prompt file.
    std::string text = vllm_card(2, 1, false);
    text.replace(text.find("model: nvidia_a100"), 18, "model: tpu_v6e");
    text.replace(text.find("total_count: 4"), 14, "total_count: 2");
    text.replace(text.find("count_per_node: 4"), 17, "count_per_node: 8");
    text.replace(text.find("dataset: random"), 15, "dataset: custom");
    text.replace(text.find("  account: m4999"), 16, "  tpu: {project: p}\n  cluster: tpu-v6e");
    Plan plan;
    const Diagnostics diagnostics = strict_plan(text, "tpu-v6e", &plan);
    INFO(diagnostics.format());
    CHECK_FALSE(diagnostics.has_errors());
    CHECK(plan.tpu_accelerator_type == "v6e-8");
    CHECK(plan.world_size == 2);
    CHECK(mentions(diagnostics, "there is no v6e-2 slice: the run uses 2 chips of a v6e-8 slice"));
    CHECK(mentions(diagnostics, "\"custom\" names no prompt file (launch.dataset_path): vllm bench latency feeds random"));
    SECTION("a custom file named is still not what the offline bench reads") {
        text.replace(text.find("  tpu: {project: p}"), 19, "  tpu: {project: p}\n  dataset_path: /data/prompts.jsonl");
        CHECK(mentions(strict_plan(text, "tpu-v6e"), "error: card.yaml:15:14: workload.data.dataset: \"custom\" is not what"));
    }
    SECTION("no slice the VM could be either") {
        text.replace(text.find("count_per_node: 8"), 17, "count_per_node: 3");
        CHECK(mentions(strict_plan(text, "tpu-v6e"),
                       "error: card.yaml:20:20: workload.hardware.xpu_spec.total_count: there is no v6e-2 slice (xpk"));
    }
}
