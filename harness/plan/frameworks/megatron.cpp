// Megatron-LM (pretrain_gpt.py) at core_v0.15.3: how the card becomes its command line, and which
// card values it cannot honour. Every rule cites the source; the contract
// docs/contracts/megatron-lm-core_v0.15.3.yaml lists the options and the trace window in full.
#include "plan/frameworks/framework_plan.hpp"
#include "plan/frameworks/hf_text.hpp"

#include "card/yaml_document.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <optional>

namespace harness {

namespace {

const std::string k_degrees = "Model-executor.model_plan_parallelization";

/// The value launch.args gives `name` (`--name=V` or `--name V`); the last one wins, as in argparse.
std::optional<std::string> arg_value(const std::vector<std::string>& args, const std::string& name) {
    std::optional<std::string> value;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == name && i + 1 < args.size()) {
            value = args[i + 1];
        } else if (starts_with(args[i], name + "=")) {
            value = args[i].substr(name.size() + 1);
        }
    }
    return value;
}

bool has_arg(const std::vector<std::string>& args, const std::string& name) {
    return std::any_of(args.begin(), args.end(), [&](const std::string& arg) { return arg == name || starts_with(arg, name + "="); });
}

std::optional<long long> to_integer(const std::string& text) {
    try {
        std::size_t used = 0;
        const long long value = std::stoll(text, &used);
        return used == text.size() ? std::optional<long long>(value) : std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

/// A count from launch.args (what Megatron reads) or else from the card's model_arch.
std::optional<long long> model_count(const WorkloadCard& card, const std::string& option, const std::string& arch_key) {
    if (const auto text = arg_value(card.launch.args, option)) {
        return to_integer(*text);
    }
    const std::string text = scalar_text(find_node(card.document().root(), "workload.model.model_arch." + arch_key));
    return text.empty() ? std::nullopt : to_integer(text);
}

/// Options the template derives from card fields: launch.args must not say otherwise, or the
/// card would describe a run other than the one that ran.
struct DerivedOption {
    const char* option;
    const char* field;
};
constexpr DerivedOption k_derived_options[] = {
    {"--tensor-model-parallel-size", "Model-executor.model_plan_parallelization.tp"},
    {"--pipeline-model-parallel-size", "Model-executor.model_plan_parallelization.pp"},
    {"--context-parallel-size", "Model-executor.model_plan_parallelization.cp"},
    {"--expert-model-parallel-size", "Model-executor.model_plan_parallelization.ep"},
    {"--micro-batch-size", "Model-executor.model_plan_parallelization.pp_mb"},
    {"--global-batch-size", "workload.data.batch_size"},
    {"--seq-length", "workload.data.seq_len"},
    {"--train-iters", "launch.steps"},
    {"--bf16", "workload.model.precision"},
    {"--fp16", "workload.model.precision"},
    {"--mock-data", "workload.data.dataset"},
    {"--data-path", "workload.data.dataset"},
    {"--profile-step-start", "launch.profile"},
    {"--profile-step-end", "launch.profile"},
    {"--profile-ranks", "launch.profile"},
    {"--tensorboard-dir", "launch.profile"},
};

void plan_precision(Plan& plan, PlanFindings& findings) {
    // No flag is fp32 (params_dtype torch.float); --fp16 and --bf16 exclude each other
    // (megatron/training/arguments.py:722-735).
    std::string precision = plan.precision;
    if (precision != "bf16" && precision != "fp16" && precision != "fp32") {
        findings.problem("workload.model.precision",
                         fmt::format("{} is not supported for megatron-lm: the harness renders --bf16, --fp16 or neither (fp32); "
                                     "the run would be bf16",
                                     precision));
        precision = "bf16";
    }
    if (precision == "fp16" && plan.parallelism.ep > 1) {
        findings.problem("workload.model.precision",
                         "fp16 is not supported for megatron-lm with expert parallelism (arguments.py:1041: \"Expert parallelism is "
                         "not supported with fp16 training\")");
    }
    set_framework_value(plan, "bf16", precision == "bf16" ? "true" : "false", "workload.model.precision " + precision);
    set_framework_value(plan, "fp16", precision == "fp16" ? "true" : "false", "workload.model.precision " + precision);
}

/// The tokenizer as one path component (the Hub's own cache spelling, org--name), so that each
/// tokenizer has its own preprocessed copy.
std::string tokenizer_slug(const std::string& model) {
    std::string slug;
    for (const char c : model) {
        if (c == '/') {
            slug += "--";
        } else {
            slug += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_') ? c : '-';
        }
    }
    const std::size_t first = slug.find_first_not_of("-.");
    return first == std::string::npos ? std::string("tokenizer") : slug.substr(first);
}

/// Real text the job tokenizes itself, before training, into the Hugging Face cache (a shared
/// file system: every node reads it, and later jobs reuse it). tools/preprocess_data.py at
/// core_v0.15.3 reads JSONL (--input, --json-keys default ["text"], preprocess_data.py:202-205)
/// and writes OUTPUT-PREFIX_text_document.bin/.idx ("{prefix}_{key}_{level}", level "document"
/// without --split-sentences, preprocess_data.py:166-178), which is the PREFIX --data-path takes.
void plan_preprocessing(const HfText& text, const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const std::string dataset = card.dataset;
    const std::string cache = fmt::format("ccl-harness/megatron-data/{}-{}", text.config, tokenizer_slug(plan.model));
    const std::string why = fmt::format("workload.data.dataset {} without launch.dataset_path: the job preprocesses "
                                        "Hugging Face {} ({}) with tools/preprocess_data.py",
                                        enquote(dataset), text.id, text.config);
    set_framework_value(plan, "hf_dataset", text.id, why);
    set_framework_value(plan, "hf_dataset_config", text.config, why);
    set_framework_value(plan, "data_cache", cache,
                        fmt::format("$HF_HOME/{} ({}): made once per dataset and tokenizer, on the file system every node "
                                    "and every later job reads",
                                    cache, plan.hf_home.empty() ? std::string("no HF_HOME") : "HF_HOME " + plan.hf_home));
    set_framework_value(plan, "data_output_prefix", text.config,
                        "preprocess_data.py --output-prefix, under the cache directory (preprocess_data.py:216)");
    set_framework_value(plan, "data_prefix", text.config + "_text_document",
                        "Megatron's --data-path PREFIX: preprocess_data.py writes {output-prefix}_text_document.bin/.idx for "
                        "--json-keys text (preprocess_data.py:166-178)");
    set_framework_value(plan, "tokenizer_model", plan.model,
                        "the model's Hugging Face tokenizer: preprocess_data.py tokenizes with it and the run reads the same ids");
    if (plan.model.empty()) {
        findings.problem("launch.model",
                         fmt::format("megatron-lm preprocesses dataset {} with the model's tokenizer: set launch.model (or "
                                     "hf_url) to the model's Hugging Face id",
                                     enquote(dataset)));
    }
    if (plan.hf_home.empty()) {
        findings.problem("launch.env.HF_HOME", fmt::format("not set: megatron-lm preprocesses dataset {} into the Hugging Face cache, "
                                                           "$HF_HOME/ccl-harness/megatron-data, on a file system every node sees",
                                                           enquote(dataset)));
    }
}

void plan_data(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const std::string& dataset = card.dataset;
    const std::string name = to_lower(dataset);
    const bool synthetic = name.empty() || name == "synthetic" || name == "mock" || name == "random" || name == "dummy";
    const std::string& prefix = card.launch.dataset_path;
    // WikiText-103 unless the card names a size: the group 1 rows' run.sh trained on WikiText-103.
    const std::optional<HfText> text = synthetic || !prefix.empty() ? std::nullopt : wikitext_dataset(dataset, "103");
    if (synthetic) {
        set_framework_value(plan, "mock_data", "true",
                            "workload.data.dataset " + (dataset.empty() ? std::string("absent") : dataset) + ": synthetic tokens");
        if (!prefix.empty()) {
            // arguments.py:1067-1070: --mock-data and --data-path exclude each other.
            findings.problem("launch.dataset_path", fmt::format("set, but workload.data.dataset {} is synthetic tokens "
                                                                "(--mock-data), which megatron-lm refuses beside --data-path",
                                                                dataset.empty() ? std::string("(absent)") : enquote(dataset)));
        }
    } else if (text) {
        plan_preprocessing(*text, card, plan, findings);
    } else if (prefix.empty()) {
        // Real text reaches Megatron only preprocessed: tools/preprocess_data.py writes
        // PREFIX.bin and PREFIX.idx (core/datasets/indexed_dataset.py:932-953), tokenized with the
        // tokenizer the run names. The contributor's copy on the cluster is the data point's.
        findings.problem("launch.dataset_path",
                         fmt::format("not set: megatron-lm reads dataset {} only preprocessed (tools/preprocess_data.py "
                                     "--tokenizer-type HuggingFaceTokenizer --tokenizer-model <the model>, which writes "
                                     "PREFIX.bin and PREFIX.idx), and the job preprocesses only WikiText itself (wikitext, "
                                     "wikitext-103, wikitext-2: Hugging Face Salesforce/wikitext); set launch.dataset_path to "
                                     "PREFIX on a file system the nodes see, or dataset: synthetic for --mock-data",
                                     enquote(dataset)));
    } else {
        set_framework_value(
            plan, "data_path", prefix,
            fmt::format("{}: Megatron's preprocessed {} (PREFIX.bin, PREFIX.idx)", located(card, "launch.dataset_path"), dataset));
        // The token ids in PREFIX.bin are the tokenizer's: the run must use the same one.
        set_framework_value(plan, "tokenizer_model", plan.model,
                            "the model's Hugging Face tokenizer, which the preprocessed ids must come from");
        if (plan.model.empty()) {
            findings.problem("launch.model", "megatron-lm with a preprocessed dataset needs the tokenizer it was made with: set "
                                             "launch.model (or hf_url) to the model's Hugging Face id");
        }
    }
    if (plan.seq_len <= 0) {
        findings.problem("workload.data.seq_len", "megatron-lm needs a sequence length (--seq-length)");
    }
}

void plan_batch(Plan& plan, PlanFindings& findings) {
    // --micro-batch-size is per rank per micro-step and global = micro × dp × num_microbatches
    // (megatron/core/num_microbatches_calculator.py:340-346). The card's pp_mb is CCL-Bench's
    // "pipeline model parallel micro-batch size", so it is the micro-batch; plan.json says the same.
    const Parallelism& par = plan.parallelism;
    const long long dp = par.dp_replicate * par.dp_shard;
    const long long micro = par.pp_mb;
    plan.micro_batch_size = micro;
    plan.origins["data.micro_batch_size"] = Origin{
        Origin::Kind::derived, "",
        fmt::format("Model-executor.model_plan_parallelization.pp_mb {}: Megatron's --micro-batch-size (per rank, per micro-step)",
                    micro)};
    if (plan.phase == "training" && plan.batch_size % (micro * dp) != 0) {
        findings.problem("workload.data.batch_size",
                         fmt::format("global batch {} is not divisible by micro-batch (pp_mb) {} × data parallelism {} "
                                     "(megatron-lm's num_microbatches_calculator.py:340)",
                                     plan.batch_size, micro, dp));
        return;
    }
    set_framework_value(plan, "num_microbatches", std::to_string(std::max(1LL, plan.batch_size / (micro * dp))),
                        fmt::format("global batch {} / (micro-batch {} × data parallelism {})", plan.batch_size, micro, dp));
}

void plan_parallelism(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const Parallelism& par = plan.parallelism;
    const long long world = plan.world_size;
    // world = tp·pp·cp·dp (arguments.py:372-385) is the generic product rule make_plan checks.
    if (par.dp_shard > 1) {
        findings.problem(k_degrees + ".dp_shard",
                         fmt::format("dp_shard {} is not supported for megatron-lm: the harness renders data parallelism with the "
                                     "distributed optimizer (dp_replicate), not FSDP",
                                     par.dp_shard));
    }
    // Experts: tensor parallel etp (default tp, arguments.py:439-440) × ep × pp must divide the
    // world (megatron/core/parallel_state.py:744-752); ep needs a multiple of it in experts
    // (arguments.py:1036-1040).
    long long etp = par.tp;
    if (const auto text = arg_value(card.launch.args, "--expert-tensor-parallel-size")) {
        etp = to_integer(*text).value_or(par.tp);
    }
    if (world % (etp * par.ep * par.pp) != 0) {
        findings.problem(k_degrees + ".ep",
                         fmt::format("expert tensor parallel {} × ep {} × pp {} = {} does not divide the world size {} "
                                     "(megatron-lm's parallel_state.py:749)",
                                     etp, par.ep, par.pp, etp * par.ep * par.pp, world));
    }
    const auto experts = model_count(card, "--num-experts", "num_experts");
    if (par.ep > 1 && !experts) {
        findings.problem(k_degrees + ".ep",
                         fmt::format("ep {} needs experts: give --num-experts in launch.args (arguments.py:1038)", par.ep));
    } else if (par.ep > 1 && *experts % par.ep != 0) {
        findings.problem(k_degrees + ".ep",
                         fmt::format("{} experts are not a multiple of ep {} (megatron-lm's arguments.py:1039)", *experts, par.ep));
    }
    const auto layers = model_count(card, "--num-layers", "num_layers");
    if (layers && *layers % par.pp != 0) {
        findings.problem(k_degrees + ".pp",
                         fmt::format("{} layers are not divisible by pp {} (megatron-lm's arguments.py:598)", *layers, par.pp));
    }
    if (par.cp > 1 && plan.seq_len % (2 * par.cp) != 0) {
        findings.problem(
            "workload.data.seq_len",
            fmt::format("seq_len {} is not a multiple of 2 × cp {} (megatron-lm's arguments.py:843)", plan.seq_len, par.cp));
    }
    for (const DerivedOption& derived : k_derived_options) {
        if (has_arg(card.launch.args, derived.option)) {
            findings.problem("launch.args",
                             fmt::format("{} is rendered from {}: set that field instead", derived.option, derived.field));
        }
    }
}

void plan_window(Plan& plan) {
    const long long w = plan.profile.wait + plan.profile.warmup;
    const long long a = plan.profile.active;
    long long start = w;
    long long end = w + a;
    long long train_iters = plan.steps;
    std::string why = fmt::format(
        "nsys: cudaProfilerStart at the top of iteration {} and Stop after iteration {} trace iterations {}..{} "
        "(training.py:2203, 1817)",
        w + 1, w + a, w + 1, w + a);
    if (plan.traces("torch_profiler")) {
        // Megatron's schedule(wait=S-1, warmup=1, active=E-S) records ProfilerStep#S..#E-1 and
        // saves at the prof.step() that opens iteration E (training.py:2155-2162, 2202), so the
        // window W+1..W+A needs S = W+1, E = W+A+1 and at least E iterations.
        start = w + 1;
        end = w + a + 1;
        train_iters = std::max(plan.steps, end);
        why = fmt::format(
            "torch.profiler: schedule(wait={}, warmup=1, active={}) records iterations {}..{} and saves the trace at the "
            "start of iteration {} (megatron/training/training.py:2155-2162, 2202)",
            start - 1, a, w + 1, w + a, end);
    }
    set_framework_value(plan, "profile_step_start", std::to_string(start), why);
    set_framework_value(plan, "profile_step_end", std::to_string(end), why);
    // nsys, in a pass of its own when torch.profiler also traces (CUPTI takes one subscriber):
    // --profile alone brackets iterations W+1..W+A with cudaProfilerStart/Stop, S = W, E = W + A.
    const std::string nsys_why = fmt::format("nsys: cudaProfilerStart at the top of iteration {} and Stop after iteration {} "
                                             "(training.py:2203, 1817)",
                                             w + 1, w + a);
    set_framework_value(plan, "nsys_step_start", std::to_string(w), nsys_why);
    set_framework_value(plan, "nsys_step_end", std::to_string(w + a), nsys_why);
    set_framework_value(plan, "train_iters", std::to_string(train_iters),
                        train_iters == plan.steps
                            ? std::string("launch.steps")
                            : fmt::format("launch.steps {} + 1: Megatron writes the torch.profiler trace of a window "
                                          "ending on the last step only when iteration {} starts",
                                          plan.steps, end));
}

} // namespace

void plan_megatron(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    if (plan.phase != "training") {
        findings.problem("workload.model.phase",
                         fmt::format("{} is not supported for megatron-lm: the harness renders pretrain_gpt.py (training)",
                                     plan.phase.empty() ? std::string("no phase") : plan.phase));
    }
    plan_precision(plan, findings);
    plan_data(card, plan, findings);
    plan_batch(plan, findings);
    plan_parallelism(card, plan, findings);
    plan_window(plan);
}

} // namespace harness
