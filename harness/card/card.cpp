#include "card/card.hpp"

#include "card/schema.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <cctype>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

FieldSpec field(std::string key, ValueKind kind, Need need = Need::optional, std::string description = "") {
    FieldSpec spec;
    spec.key = std::move(key);
    spec.kind = kind;
    spec.need = need;
    spec.description = std::move(description);
    return spec;
}

FieldSpec section(std::string key, Need need, std::string description, std::vector<FieldSpec> children) {
    FieldSpec spec = field(std::move(key), ValueKind::map, need, std::move(description));
    spec.children = std::move(children);
    return spec;
}

FieldSpec choice(std::string key, Need need, std::vector<std::string> choices, bool strict, std::string description) {
    FieldSpec spec = field(std::move(key), ValueKind::string, need, std::move(description));
    spec.choices = std::move(choices);
    spec.choices_are_strict = strict;
    return spec;
}

FieldSpec moved(std::string key, ValueKind kind, std::string to) {
    FieldSpec spec = field(key, kind);
    spec.description = fmt::format("old place of {}.{}", to, key);
    spec.moved_to = std::move(to);
    return spec;
}

FieldSpec env_block(std::string key, std::string description) {
    FieldSpec spec = field(std::move(key), ValueKind::free_map, Need::optional, std::move(description));
    spec.identifier_keys = true;
    return spec;
}

std::vector<FieldSpec> model_arch_fields() {
    return {
        field("num_params", ValueKind::nonneg_int, Need::optional, "total parameters"),
        field("num_params_embedding", ValueKind::nonneg_int, Need::optional, "embedding parameters"),
        field("num_params_active", ValueKind::nonneg_int, Need::optional, "parameters active per token (MoE)"),
        field("num_active_params", ValueKind::nonneg_int, Need::optional, "parameters active per token (MoE; older spelling)"),
        field("num_layers", ValueKind::positive_int, Need::optional, "transformer layers"),
        field("num_heads", ValueKind::positive_int, Need::optional, "attention heads"),
        field("num_kv_heads", ValueKind::positive_int, Need::optional, "key/value heads (GQA)"),
        field("head_dim", ValueKind::positive_int, Need::optional, "dimension of one attention head"),
        field("hidden_size", ValueKind::positive_int, Need::optional, "model (hidden) dimension"),
        field("intermediate_size", ValueKind::positive_int, Need::optional, "feed-forward dimension"),
        field("vocab_size", ValueKind::positive_int, Need::optional, "vocabulary size"),
        field("num_experts", ValueKind::positive_int, Need::optional, "routed experts (MoE)"),
        field("num_shared_experts", ValueKind::nonneg_int, Need::optional, "shared experts (MoE)"),
        field("num_experts_per_tok", ValueKind::positive_int, Need::optional, "experts each token is routed to (MoE)"),
    };
}

std::vector<FieldSpec> build_schema() {
    FieldSpec version = choice("version", Need::required, {"1"}, true, "card format version");
    FieldSpec phase = choice("phase", Need::required, {"training", "inference", "serving"}, true, "what the workload does");
    FieldSpec xpu_type = choice("type", Need::expected, {"GPU", "TPU", "CPU"}, false, "accelerator kind");
    FieldSpec traces = field("traces", ValueKind::string_list, Need::expected, "trace kinds collected; chooses the tracers");
    traces.choices = {"json", "nsys", "json_tpu", "kineto_trace", "sglang", "xla_trace", "tpu_profiler"};
    FieldSpec runtime = choice("runtime", Need::optional, {"shifter", "podman-hpc", "podman", "docker", "none"}, true,
                               "container runtime (default from the cluster profile)");
    FieldSpec description = field("description", ValueKind::string, Need::expected, "what this data point is, in a sentence");
    FieldSpec contributor = field("contributor", ValueKind::string, Need::expected, "who collected the data point");
    contributor.note = "a data point should say who collected it";
    FieldSpec executor = section(
        "Model-executor", Need::expected, "how the workload ran: framework, parallelism, communication",
        {
            section(
                "framework", Need::required, "the training or serving framework",
                {
                    field("name", ValueKind::string, Need::required, "framework name, e.g. torchtitan, megatron-lm, maxtext, vllm"),
                    field("compiler_tool_selection", ValueKind::string, Need::optional,
                          "compiler or graph tool, e.g. torch.compile, XLA"),
                    field("version", ValueKind::string, Need::optional, "framework version"),
                    env_block("env", "framework environment variables: NAME: value"),
                }),
            section("model_plan_parallelization", Need::required, "parallel degrees; their product is xpu_spec.total_count",
                    {
                        field("dp_replicate", ValueKind::positive_int, Need::required, "data-parallel replicas"),
                        field("dp_shard", ValueKind::positive_int, Need::required, "data-parallel shards (FSDP)"),
                        field("tp", ValueKind::positive_int, Need::required, "tensor-parallel degree"),
                        field("pp", ValueKind::positive_int, Need::required, "pipeline-parallel degree"),
                        field("cp", ValueKind::positive_int, Need::required, "context-parallel degree"),
                        field("ep", ValueKind::positive_int, Need::optional, "expert-parallel degree (default 1)"),
                        field("pp_mb", ValueKind::positive_int, Need::optional, "pipeline microbatches (default 1)"),
                    }),
            section("communication_library", Need::expected, "the collective communication library",
                    {
                        field("name", ValueKind::string, Need::expected, "e.g. NCCL, RCCL, gloo, XLA"),
                        field("version", ValueKind::string, Need::optional, "library version"),
                        env_block("env", "communication environment variables: NAME: value (empty: not set)"),
                    }),
            field("protocol_selection", ValueKind::string_list, Need::optional, "communication protocols or algorithms used"),
            section("expert_parallel", Need::optional, "expert-parallel settings (MoE)",
                    {
                        field("eplb", ValueKind::boolean, Need::optional, "expert-parallel load balancing"),
                        field("mode", ValueKind::string, Need::optional, "expert-parallel mode"),
                        field("top_k", ValueKind::positive_int, Need::optional, "experts per token"),
                    }),
            field("serving", ValueKind::any, Need::optional, "serving framework settings, free form"),
        });
    executor.note = "the card says what ran but not how; it can be archived, not run";

    FieldSpec hardware = section(
        "hardware", Need::expected, "the machine the workload ran on",
        {
            section("network_topo", Need::expected, "the interconnect",
                    {
                        field("topology", ValueKind::string, Need::expected, "e.g. slingshot, torus, nvlink"),
                        field("bandwidth_gbps", ValueKind::bandwidth, Need::expected,
                              "[scale_out, scale_up] in Gbps; N/A where there is none"),
                    }),
            section("xpu_spec", Need::required, "the accelerators",
                    {
                        xpu_type,
                        field("model", ValueKind::string, Need::required,
                              "accelerator model; picks the target: nvidia_a100* -> perlmutter, tpu_v6e -> tpu-v6e, cpu -> local"),
                        field("total_count", ValueKind::positive_int, Need::required, "accelerators in the job"),
                        field("count_per_node", ValueKind::positive_int, Need::required, "accelerators per node (host)"),
                        field("topology", ValueKind::string, Need::optional, "slice or node topology, e.g. 4x4"),
                        field("memory_gb", ValueKind::number, Need::optional, "memory per accelerator in GB"),
                    }),
            field("driver_version", ValueKind::string, Need::expected, "accelerator driver version"),
        });
    hardware.note = "needed to run the card";

    std::vector<FieldSpec> model = {
        phase,
        field("moe", ValueKind::boolean, Need::expected, "a mixture-of-experts model"),
        choice("granularity", Need::expected, {"model_fwd_bwd_pass", "model_fwd", "model_fwd_pass", "layer", "kernel"}, false,
               "what one traced step covers"),
        field("model_family", ValueKind::string, Need::required, "model name, e.g. llama-3.1-8b"),
        choice("precision", Need::expected, {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "mixed"}, false,
               "numeric precision"),
        field("epochs", ValueKind::positive_int, Need::optional, "epochs"),
        field("iteration", ValueKind::positive_int, Need::optional, "steps or iterations; the default step count"),
        section("model_arch", Need::optional, "model architecture", model_arch_fields()),
    };
    for (const char* key : {"num_params", "num_params_embedding", "num_params_active", "num_layers", "num_heads", "head_dim"}) {
        model.push_back(moved(key, ValueKind::nonneg_int, "workload.model.model_arch"));
    }

    return {
        version,
        description,
        field("hf_url", ValueKind::string, Need::optional, "Hugging Face model page; gives the default launch.model"),
        field("trace_url", ValueKind::string, Need::optional, "where the traces are archived (filled by pack)"),
        contributor,
        field("contact", ValueKind::string, Need::expected, "how to reach the contributor"),
        section(
            "workload", Need::required, "the model, data and hardware",
            {
                section("model", Need::required, "the model", model),
                section("data", Need::expected, "batch, sequence lengths and dataset",
                        {
                            field("batch_size", ValueKind::positive_int, Need::optional,
                                  "batch size (global unless batch_size_scope says otherwise)"),
                            choice("batch_size_scope", Need::optional, {"global", "per_device", "per_replica", "per_rank", "local"},
                                   false, "what batch_size counts"),
                            field("seq_len", ValueKind::positive_int, Need::expected, "sequence length (needed for training)"),
                            field("input_len", ValueKind::positive_int, Need::optional, "prompt length (inference)"),
                            field("output_len", ValueKind::positive_int, Need::optional, "generated length (inference)"),
                            field("dataset", ValueKind::string, Need::expected, "dataset name"),
                            field("max-model-len", ValueKind::positive_int, Need::optional, "vLLM --max-model-len"),
                            field("max-num-batched-tokens", ValueKind::positive_int, Need::optional, "vLLM --max-num-batched-tokens"),
                            field("max-num-seqs", ValueKind::positive_int, Need::optional, "vLLM --max-num-seqs"),
                            field("max_tokens", ValueKind::positive_int, Need::optional, "tokens generated per request (serving)"),
                            field("num_prompts", ValueKind::positive_int, Need::optional, "prompts sent (serving)"),
                            field("request_rate", ValueKind::number, Need::optional, "requests per second (serving)"),
                        }),
                hardware,
            }),
        executor,
        section("metric_source", Need::expected, "the traces behind the metrics",
                {
                    traces,
                    field("metrics_specific_trace", ValueKind::string_list, Need::optional, "traces used by particular metrics"),
                    field("ranks_present", ValueKind::string_list, Need::optional,
                          "the ranks whose traces a partial archive holds (ingest --ranks); absent: every rank"),
                }),
        field("collection_notes", ValueKind::any, Need::optional, "free-form notes on how the data was collected"),
        section("launch", Need::optional, "what a run needs and an archived card does not say (ccl-harness)",
                {
                    field("cluster", ValueKind::string, Need::optional,
                          "cluster profile in clusters/ (else inferred from xpu_spec.model)"),
                    field("account", ValueKind::string, Need::optional, "Slurm account (-A)"),
                    field("qos", ValueKind::string, Need::optional, "Slurm QOS (-q)"),
                    field("partition", ValueKind::string, Need::optional, "Slurm partition (-p)"),
                    field("time_limit", ValueKind::string, Need::optional, "minutes, HH:MM:SS or D-HH:MM:SS"),
                    field("constraint", ValueKind::string, Need::optional, "Slurm constraint (-C)"),
                    section("container", Need::optional, "the container the job runs in",
                            {
                                field("image", ValueKind::string, Need::optional, "image pinned by digest: NAME@sha256:<64 hex>"),
                                runtime,
                                field("cuda", ValueKind::string, Need::optional,
                                      "the CUDA version the image is built on (\"13.0\"): picks the site's NCCL plugin"),
                            }),
                    section("source", Need::optional, "the framework checkout, pinned to a commit by run",
                            {
                                field("repo", ValueKind::string, Need::optional, "git URL or absolute path"),
                                field("ref", ValueKind::string, Need::optional, "branch, tag or commit"),
                            }),
                    field("model", ValueKind::string, Need::optional, "Hugging Face model id or path (default from hf_url)"),
                    field("script", ValueKind::string, Need::optional, "entry point beside the card, or inside launch.source"),
                    field("dataset_path", ValueKind::string, Need::optional,
                          "the file a serving bench reads (ShareGPT JSON, BurstGPT CSV, custom JSONL), an HF dataset id, or "
                          "Megatron's preprocessed PREFIX (PREFIX.bin, PREFIX.idx)"),
                    field("steps", ValueKind::positive_int, Need::optional, "steps (training) or iterations (inference)"),
                    section("profile", Need::optional, "the traced window: wait, then warm up, then record",
                            {
                                field("wait", ValueKind::nonneg_int, Need::optional, "steps before the profiler starts (default 1)"),
                                field("warmup", ValueKind::nonneg_int, Need::optional, "profiler warm-up steps (default 5)"),
                                field("active", ValueKind::positive_int, Need::optional, "recorded steps (default 5)"),
                            }),
                    field("args", ValueKind::string_list, Need::optional, "extra framework arguments, one word each"),
                    env_block("env", "environment exported last: NAME: value"),
                    section("tpu", Need::optional, "TPU targets",
                            {
                                field("project", ValueKind::string, Need::optional, "Google Cloud project"),
                                field("zone", ValueKind::string, Need::optional, "zone (default from the profile)"),
                                field("name", ValueKind::string, Need::optional, "queued resource name (default ccl-<card name>)"),
                                field("runtime_version", ValueKind::string, Need::optional, "TPU runtime version"),
                                field("spot", ValueKind::boolean, Need::optional, "spot capacity"),
                            }),
                }),
    };
}

std::string text_at(const YAML::Node& root, const std::string& path) { return trim(scalar_text(find_node(root, path))); }

std::optional<long long> int_at(const YAML::Node& root, const std::string& path) {
    long long value = 0;
    if (read_int(find_node(root, path), value)) {
        return value;
    }
    return std::nullopt;
}

std::vector<std::string> list_at(const YAML::Node& root, const std::string& path) {
    const YAML::Node node = find_node(root, path);
    std::vector<std::string> out;
    if (node.IsScalar() && !trim(node.Scalar()).empty()) {
        out.push_back(trim(node.Scalar()));
    } else if (node.IsSequence()) {
        for (const auto& item : node) {
            if (item.IsScalar() && !trim(item.Scalar()).empty()) {
                out.push_back(trim(item.Scalar()));
            }
        }
    }
    return out;
}

// launch.args reach the job as argv words: each item exactly as written, empty and
// space-holding ones included, never trimmed or dropped (the job must get what the card says).
std::vector<std::string> words_at(const YAML::Node& root, const std::string& path) {
    const YAML::Node node = find_node(root, path);
    std::vector<std::string> out;
    if (node.IsScalar()) {
        out.push_back(node.Scalar());
    } else if (node.IsSequence()) {
        for (const auto& item : node) {
            if (item.IsScalar()) {
                out.push_back(item.Scalar());
            }
        }
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> env_at(const YAML::Node& root, const std::string& path) {
    const YAML::Node node = find_node(root, path);
    std::vector<std::pair<std::string, std::string>> out;
    if (node.IsMap()) {
        for (auto it = node.begin(); it != node.end(); ++it) {
            // An empty value in the template (`NCCL_IB_QPS_PER_CONNECTION:`) means "not set".
            if (it->first.IsScalar() && it->second.IsScalar()) {
                out.emplace_back(it->first.Scalar(), it->second.Scalar());
            }
        }
    }
    return out;
}

} // namespace

const std::vector<FieldSpec>& card_schema() {
    static const std::vector<FieldSpec> schema = build_schema();
    return schema;
}

const std::vector<std::string>& card_sections() {
    static const std::vector<std::string> sections = {"Model-executor", "metric_source", "workload", "launch"};
    return sections;
}

const std::vector<std::string>& card_lifted_sections() {
    static const std::vector<std::string> sections = {"Model-executor"};
    return sections;
}

void check_card_paths(const std::vector<std::string>& assignments, const std::string& flag) {
    for (const auto& assignment : assignments) {
        const std::size_t eq = assignment.find('=');
        if (eq == std::string::npos) {
            continue; // malformed: the flag's own parser says so
        }
        const std::string reason = unknown_field_reason(card_schema(), trim(assignment.substr(0, eq)));
        if (!reason.empty()) {
            throw input_error(fmt::format("{} {}: {}", flag, assignment, reason));
        }
    }
}

namespace {

/// A CCL-Bench section indented one level too deep (16 corpus cards nest Model-executor under
/// workload) is read where it belongs, as CCL-Bench's own loader reads such cards, with a
/// warning at the line. A --set into the section as it belongs leaves the nested one unread
/// (and reported by the checker): the file's indentation is the thing to fix.
std::vector<std::pair<std::string, std::string>> lift_misplaced_sections(YamlDocument& doc) {
    std::vector<std::pair<std::string, std::string>> warnings;
    for (const auto& [path, node] : doc.lift_nested_sections(card_lifted_sections())) {
        warnings.emplace_back(doc.location(node, path), path);
    }
    return warnings;
}

} // namespace

WorkloadCard WorkloadCard::load(const fs::path& path, const std::vector<std::string>& overrides) {
    YamlDocument doc = YamlDocument::load(path);
    for (const auto& assignment : overrides) {
        doc.set(assignment);
    }
    return from_document(std::move(doc));
}

WorkloadCard WorkloadCard::from_document(YamlDocument doc) {
    WorkloadCard card;
    card.m_doc = std::move(doc);
    for (const auto& [location, nested] : lift_misplaced_sections(card.m_doc)) {
        const std::size_t dot = nested.find('.');
        card.m_diagnostics.warning(location, nested,
                                   fmt::format("section {} is nested under {}; read as the top-level section it belongs to "
                                               "(check its indentation)",
                                               enquote(nested.substr(dot + 1)), nested.substr(0, dot)));
    }
    card.m_diagnostics.append(check_document(card.m_doc, card_schema(), card_sections()));
    if (!card.m_diagnostics.has_errors()) {
        card.read_fields();
    }
    return card;
}

std::string workload_name_problem(const std::string& name) {
    if (name.empty() || name.size() > 64) {
        return "a name has 1 to 64 characters";
    }
    if (name[0] == '.' || name[0] == '-') {
        return "a name cannot start with '.' or '-'";
    }
    for (const char c : name) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-') {
            return "a name has letters, digits, '.', '_' and '-' only";
        }
    }
    return {};
}

std::string row_name(const fs::path& path) {
    if (path.stem() != "card") {
        return {};
    }
    const std::string dir = absolute_path(path).parent_path().filename().string();
    return workload_name_problem(dir).empty() ? dir : std::string();
}

std::string WorkloadCard::name() const {
    if (!m_name.empty()) {
        return m_name;
    }
    // The name reaches comments, job names and directory names: no control characters.
    std::string stem = m_doc.path().stem().string();
    for (char& c : stem) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            c = '_';
        }
    }
    return stem.empty() ? std::string("card") : stem;
}

void WorkloadCard::read_fields() {
    const YAML::Node& root = m_doc.root();
    description = text_at(root, "description");
    hf_url = text_at(root, "hf_url");
    phase = to_lower(text_at(root, "workload.model.phase"));
    model_family = text_at(root, "workload.model.model_family");
    precision = to_lower(text_at(root, "workload.model.precision"));
    read_bool(find_node(root, "workload.model.moe"), moe);
    batch_size = int_at(root, "workload.data.batch_size");
    batch_size_scope = to_lower(text_at(root, "workload.data.batch_size_scope"));
    dataset = text_at(root, "workload.data.dataset");
    seq_len = int_at(root, "workload.data.seq_len");
    input_len = int_at(root, "workload.data.input_len");
    output_len = int_at(root, "workload.data.output_len");
    iteration = int_at(root, "workload.model.iteration");
    has_hardware = find_node(root, "workload.hardware.xpu_spec").IsMap();
    xpu_type = text_at(root, "workload.hardware.xpu_spec.type");
    xpu_model = to_lower(text_at(root, "workload.hardware.xpu_spec.model"));
    total_count = int_at(root, "workload.hardware.xpu_spec.total_count").value_or(0);
    count_per_node = int_at(root, "workload.hardware.xpu_spec.count_per_node").value_or(0);
    double memory = 0;
    if (read_number(find_node(root, "workload.hardware.xpu_spec.memory_gb"), memory)) {
        memory_gb = memory;
    }
    has_executor = find_node(root, "Model-executor").IsMap();
    framework = text_at(root, "Model-executor.framework.name");
    framework_version = text_at(root, "Model-executor.framework.version");
    compiler = text_at(root, "Model-executor.framework.compiler_tool_selection");
    const std::string par = "Model-executor.model_plan_parallelization.";
    parallelism.tp = int_at(root, par + "tp").value_or(1);
    parallelism.pp = int_at(root, par + "pp").value_or(1);
    parallelism.cp = int_at(root, par + "cp").value_or(1);
    parallelism.dp_replicate = int_at(root, par + "dp_replicate").value_or(1);
    parallelism.dp_shard = int_at(root, par + "dp_shard").value_or(1);
    parallelism.ep = int_at(root, par + "ep").value_or(1);
    parallelism.pp_mb = int_at(root, par + "pp_mb").value_or(1);
    comm_library = text_at(root, "Model-executor.communication_library.name");
    comm_env = env_at(root, "Model-executor.communication_library.env");
    traces = list_at(root, "metric_source.traces");

    launch.cluster = text_at(root, "launch.cluster");
    launch.account = text_at(root, "launch.account");
    launch.qos = text_at(root, "launch.qos");
    launch.partition = text_at(root, "launch.partition");
    launch.time_limit = text_at(root, "launch.time_limit");
    launch.constraint = text_at(root, "launch.constraint");
    launch.container_image = text_at(root, "launch.container.image");
    launch.container_runtime = to_lower(text_at(root, "launch.container.runtime"));
    launch.container_cuda = text_at(root, "launch.container.cuda");
    launch.source_repo = text_at(root, "launch.source.repo");
    launch.source_ref = text_at(root, "launch.source.ref");
    launch.model = text_at(root, "launch.model");
    launch.dataset_path = text_at(root, "launch.dataset_path");
    launch.steps = int_at(root, "launch.steps");
    if (find_node(root, "launch.profile").IsMap()) {
        ProfileWindow window;
        window.wait = int_at(root, "launch.profile.wait").value_or(window.wait);
        window.warmup = int_at(root, "launch.profile.warmup").value_or(window.warmup);
        window.active = int_at(root, "launch.profile.active").value_or(window.active);
        launch.profile = window;
    }
    launch.args = words_at(root, "launch.args");
    launch.env = env_at(root, "launch.env");
    launch.tpu_project = text_at(root, "launch.tpu.project");
    launch.tpu_zone = text_at(root, "launch.tpu.zone");
    launch.tpu_name = text_at(root, "launch.tpu.name");
    launch.tpu_runtime_version = text_at(root, "launch.tpu.runtime_version");
    read_bool(find_node(root, "launch.tpu.spot"), launch.tpu_spot);

    static const std::regex time_format(R"(^(\d+-)?\d{1,2}:\d{2}:\d{2}$|^\d+$)");
    if (!launch.time_limit.empty() && !std::regex_match(launch.time_limit, time_format)) {
        m_diagnostics.error(m_doc.location(find_node(root, "launch.time_limit"), "launch.time_limit"), "launch.time_limit",
                            fmt::format("expected minutes, HH:MM:SS or D-HH:MM:SS, got {}", enquote(launch.time_limit)));
    }
}

} // namespace harness
