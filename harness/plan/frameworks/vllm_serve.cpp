// vLLM online serving (docs/contracts/vllm-v0.19.0.yaml, serve: and bench_serve:): the card's run
// becomes the options of `vllm serve` (the engine, traced) and `vllm bench serve` (the client).
#include "plan/frameworks/vllm_serve.hpp"

#include "card/schema.hpp"
#include "plan/frameworks/hf_text.hpp"
#include "trace/trace_names.hpp"
#include "card/yaml_document.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <optional>

namespace harness {

namespace {

/// What `vllm bench serve --dataset-name` a card's dataset is, and whether it needs a file.
struct ServeDataset {
    std::string name; ///< sharegpt | burstgpt | custom | sonnet | hf | random; "" when none fits
    bool needs_path = false;
};

bool random_prompts(const std::string& lower) {
    return lower.empty() || lower == "random" || lower == "synthetic" || lower == "dummy" || starts_with(lower, "random_") ||
           ends_with(lower, "_random");
}

// The names are add_dataset_parser's --dataset-name choices (vllm/benchmarks/datasets.py); every
// one but random reads --dataset-path (ShareGPTDataset, BurstGPTDataset, CustomDataset,
// SonnetDataset load it; hf takes a Hugging Face dataset id there).
ServeDataset serve_dataset(const std::string& dataset) {
    const std::string lower = to_lower(trim(dataset));
    if (random_prompts(lower)) {
        return {"random", false};
    }
    for (const char* name : {"sharegpt", "burstgpt", "sonnet"}) {
        if (lower.find(name) != std::string::npos) {
            return {name, true};
        }
    }
    if (starts_with(lower, "custom") || wikitext_dataset(dataset, "2")) {
        return {"custom", true}; // WikiText: a JSONL of its rows that the job writes (plan_wikitext_prompts)
    }
    if (lower.find('/') != std::string::npos) {
        return {"hf", false}; // an HF dataset id (org/name) is its own --dataset-path
    }
    return {};
}

/// A dataset file the vLLM benchmarks' README tells users to download, which the job fetches
/// into a cache on the shared file system when the card names it and no launch.dataset_path.
struct PublicDatasetFile {
    const char* dataset_name; ///< --dataset-name
    const char* file;
    const char* url;
};

// vLLM v0.19.0 benchmarks/README.md, "Dataset Overview": ShareGPT's `wget` line, and BurstGPT's
// `wget` of the v1.1 release asset; the Mixtral group12 rows' client.sh reads the same ShareGPT
// file (--dataset-path ../ShareGPT_V3_unfiltered_cleaned_split.json).
constexpr PublicDatasetFile k_public_datasets[] = {
    {"sharegpt", "ShareGPT_V3_unfiltered_cleaned_split.json",
     "https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/"
     "ShareGPT_V3_unfiltered_cleaned_split.json"},
    {"burstgpt", "BurstGPT_without_fails_2.csv",
     "https://github.com/HPMLL/BurstGPT/releases/download/v1.1/BurstGPT_without_fails_2.csv"},
};

/// The public file a card's dataset names: the family's bare name, or the file's own stem.
const PublicDatasetFile* public_dataset_file(const std::string& dataset) {
    const std::string lower = to_lower(trim(dataset));
    for (const PublicDatasetFile& known : k_public_datasets) {
        std::string stem = to_lower(known.file);
        stem = stem.substr(0, stem.rfind('.'));
        if (lower == known.dataset_name || lower == stem || lower == to_lower(known.file)) {
            return &known;
        }
    }
    return nullptr;
}

/// The first of `spellings` (the corpus writes max-num-seqs; argparse's dest is max_num_seqs)
/// the card's data section holds as an integer, and its path.
std::pair<std::string, long long> data_int(const WorkloadCard& card, std::initializer_list<const char*> spellings) {
    for (const char* key : spellings) {
        const std::string path = std::string("workload.data.") + key;
        long long value = 0;
        if (read_int(find_node(card.document().root(), path), value)) {
            return {path, value};
        }
    }
    return {"", 0};
}

void set_engine_limits(const WorkloadCard& card, Plan& plan) {
    struct Limit {
        const char* key;
        std::initializer_list<const char*> spellings;
    };
    for (const Limit& limit : {Limit{"max_model_len", {"max-model-len", "max_model_len"}},
                               Limit{"max_num_batched_tokens", {"max-num-batched-tokens", "max_num_batched_tokens"}},
                               Limit{"max_num_seqs", {"max-num-seqs", "max_num_seqs"}}}) {
        const auto [path, value] = data_int(card, limit.spellings);
        if (!path.empty()) {
            set_framework_value(plan, limit.key, std::to_string(value), located(card, path));
        }
    }
}

/// WikiText as prompts, as group 9's run_script.py sent them (its load_dataset_10: wikitext-2-raw-v1's
/// test split, each row stripped, those over 20 characters, to /v1/chat/completions): the job
/// writes them once as the JSONL `--dataset-name custom` reads ({"prompt": ...} lines, vLLM's
/// CustomDataset) into the shared cache, with templates/common/ccl_text_dataset.py.
void plan_wikitext_prompts(const HfText& text, const WorkloadCard& card, Plan& plan) {
    const std::string why = fmt::format("{} without launch.dataset_path: the job writes Hugging Face {} ({}, test split) "
                                        "as custom prompts, once, into $HF_HOME/ccl-harness/datasets",
                                        located(card, "workload.data.dataset"), text.id, text.config);
    set_framework_value(plan, "hf_dataset", text.id, why);
    set_framework_value(plan, "hf_dataset_config", text.config, why);
    set_framework_value(plan, "hf_dataset_split", "test",
                        "group 9's run_script.py read the test split (and wikitext-2-raw-v1 where the card says only wikitext)");
    set_framework_value(plan, "prompt_file", text.config + "-test-prompts.jsonl",
                        "each row stripped, over 20 characters, as run_script.py filtered them");
}

void plan_client(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const ServeDataset dataset = serve_dataset(card.dataset);
    if (dataset.name.empty()) {
        // c4...: not among --dataset-name's choices, and --dataset-name hf loads only the HF
        // datasets get_samples has a loader class for (others: "Unsupported dataset path").
        findings.problem("workload.data.dataset",
                         fmt::format("{} is not a dataset vllm bench serve reads: its --dataset-name takes sharegpt, "
                                     "burstgpt, custom, sonnet, random, or hf with a Hugging Face dataset id it has a "
                                     "loader for (c4 has none), and the job writes only WikiText as custom prompts "
                                     "itself; set dataset: random, or ShareGPT/custom with launch.dataset_path naming the file",
                                     enquote(card.dataset)));
        return;
    }
    const std::string where = card.dataset.empty() ? "workload.data.dataset not set: random prompts"
                                                   : located(card, "workload.data.dataset");
    set_framework_value(plan, "dataset_name", dataset.name, where);
    if (dataset.name == "random") {
        set_framework_value(plan, "dataset_random", "true", "--random-input-len input_len, --random-output-len output_len");
    }
    std::string path = card.launch.dataset_path;
    if (path.empty() && dataset.name == "hf") {
        path = trim(card.dataset);
    }
    if (!path.empty() && dataset.name != "random") {
        set_framework_value(plan, "dataset_path", path,
                            card.launch.dataset_path.empty() ? "the HF dataset id workload.data.dataset names"
                                                             : located(card, "launch.dataset_path"));
    } else if (const std::optional<HfText> text = wikitext_dataset(card.dataset, "2")) {
        plan_wikitext_prompts(*text, card, plan);
    } else if (const PublicDatasetFile* known = dataset.needs_path ? public_dataset_file(card.dataset) : nullptr) {
        set_framework_value(plan, "dataset_file", known->file,
                            fmt::format("{} names the public {} file; the job downloads it once into the cache on the "
                                        "shared file system ($HF_HOME/ccl-harness/datasets) and records its sha256; "
                                        "launch.dataset_path names a copy of your own instead",
                                        located(card, "workload.data.dataset"), known->file));
        set_framework_value(plan, "dataset_url", known->url, "vLLM's benchmarks/README.md download line");
    } else if (dataset.needs_path) {
        findings.problem(
            "launch.dataset_path",
            fmt::format("not set: dataset {} is a file vllm bench serve reads with --dataset-path "
                        "(--dataset-name {}); set launch.dataset_path to it (a path the job's node sees){}",
                        enquote(card.dataset), dataset.name,
                        dataset.name == "sharegpt" || dataset.name == "burstgpt"
                            ? fmt::format(", or name the public file the job downloads itself: dataset: {}",
                                          dataset.name == "sharegpt" ? k_public_datasets[0].file : k_public_datasets[1].file)
                            : std::string()));
    } else if (!path.empty()) {
        // datasets.py _ValidateDatasetArgs: "Cannot use 'random' dataset with --dataset-path".
        findings.problem("launch.dataset_path", "set, but the dataset is random prompts: vllm bench serve refuses "
                                                "--dataset-path with --dataset-name random");
    }
    if (card.output_len && (dataset.name == "sharegpt" || dataset.name == "custom" || dataset.name == "hf")) {
        set_framework_value(plan, "dataset_output_len_option", "--" + dataset.name + "-output-len",
                            "workload.data.output_len caps each request's generated tokens");
    }

    const auto [prompts_path, prompts] = data_int(card, {"num_prompts", "num-prompts"});
    set_framework_value(plan, "num_prompts", std::to_string(prompts_path.empty() ? 1000 : prompts),
                        prompts_path.empty() ? "vllm bench serve's own default (datasets.py add_dataset_parser: "
                                               "--num-prompts default=1000); workload.data.num_prompts sets it"
                                             : located(card, prompts_path));
    const std::string rate_path = "workload.data.request_rate";
    const YAML::Node rate = find_node(card.document().root(), rate_path);
    double rate_value = 0;
    if (read_number(rate, rate_value) && rate_value > 0) {
        set_framework_value(plan, "request_rate", trim(scalar_text(rate)), located(card, rate_path));
    } else {
        set_framework_value(plan, "request_rate", "inf",
                            "vllm bench serve's own default (serve.py add_cli_args: --request-rate "
                            "default=float(\"inf\"): every request at time 0); workload.data.request_rate sets it");
    }
}

} // namespace

std::string vllm_serve_reason(const WorkloadCard& card) {
    if (card.phase == "serving") {
        return fmt::format("{}: serving: vllm serve, then vllm bench serve against it", located(card, "workload.model.phase"));
    }
    const ServeDataset dataset = serve_dataset(card.dataset);
    if (!dataset.name.empty() && dataset.name != "random") {
        return fmt::format("{}: {} is read by vllm bench serve (--dataset-name {}), not by vllm bench latency's "
                           "random prompts: vllm serve, then vllm bench serve against it",
                           located(card, "workload.data.dataset"), enquote(card.dataset), dataset.name);
    }
    return {};
}

void plan_vllm_serve(const WorkloadCard& card, Plan& plan, PlanFindings& findings, const std::string& reason) {
    set_framework_value(plan, "serve", "true", reason);
    set_torch_dtype(plan, findings, "vllm");

    // One server: dp engine processes of tp × pp GPU workers each (--data-parallel-size), on one
    // node: its multi-node form (--data-parallel-address, a head and headless nodes) is not rendered.
    const Parallelism& par = plan.parallelism;
    const long long dp = par.dp_replicate * par.dp_shard;
    set_framework_value(plan, "data_parallel_size", std::to_string(dp), "dp_replicate × dp_shard: one engine per replica");
    check_one_node_server(card, plan, findings, "vllm serve", "--data-parallel-address, headless engines");
    plan_vllm_expert_parallel(card, plan, findings, dp);
    // json and nsys together: CUPTI takes one subscriber, so the job serves twice (a torch.profiler
    // pass, then an Nsight Systems pass whose client result is the run's): templates/common/vllm_serve.mustache.
    set_engine_limits(card, plan);
    // Loading the weights and capturing graphs takes minutes (Mixtral-8x7B: several on A100s);
    // past this the job stops instead of waiting out its time limit on a server that hangs.
    set_framework_value(plan, "health_timeout_s", "1800",
                        "how long the job waits for the server's /health (CCL_SERVE_HEALTH_TIMEOUT overrides it)");
    plan_client(card, plan, findings);
    set_framework_value(plan, "result_stem", k_serving_result_stem,
                        "the client's result, logs/<stem>.json, which metrics read back for ttft and tpot");
    // The window is the whole benchmark: bench serve --profile posts /start_profile before the
    // first request and /stop_profile after the last; no ProfilerStep#N, execute_context_* steps.
    plan.traced_steps = 0;
}

} // namespace harness
