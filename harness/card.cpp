#include "card.hpp"

#include "schema.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

FieldSpec field(std::string key, ValueKind kind, Need need = Need::optional) {
    FieldSpec spec;
    spec.key = std::move(key);
    spec.kind = kind;
    spec.need = need;
    return spec;
}

FieldSpec section(std::string key, Need need, std::vector<FieldSpec> children) {
    FieldSpec spec = field(std::move(key), ValueKind::map, need);
    spec.children = std::move(children);
    return spec;
}

FieldSpec choice(std::string key, Need need, std::vector<std::string> choices, bool strict) {
    FieldSpec spec = field(std::move(key), ValueKind::string, need);
    spec.choices = std::move(choices);
    spec.choices_are_strict = strict;
    return spec;
}

FieldSpec moved(std::string key, ValueKind kind, std::string to) {
    FieldSpec spec = field(std::move(key), kind);
    spec.moved_to = std::move(to);
    return spec;
}

FieldSpec env_block(std::string key) {
    FieldSpec spec = field(std::move(key), ValueKind::free_map);
    spec.identifier_keys = true;
    return spec;
}

std::vector<FieldSpec> model_arch_fields() {
    return {
        field("num_params", ValueKind::nonneg_int),
        field("num_params_embedding", ValueKind::nonneg_int),
        field("num_params_active", ValueKind::nonneg_int),
        field("num_active_params", ValueKind::nonneg_int),
        field("num_layers", ValueKind::positive_int),
        field("num_heads", ValueKind::positive_int),
        field("num_kv_heads", ValueKind::positive_int),
        field("head_dim", ValueKind::positive_int),
        field("hidden_size", ValueKind::positive_int),
        field("intermediate_size", ValueKind::positive_int),
        field("vocab_size", ValueKind::positive_int),
        field("num_experts", ValueKind::positive_int),
        field("num_shared_experts", ValueKind::nonneg_int),
        field("num_experts_per_tok", ValueKind::positive_int),
    };
}

std::vector<FieldSpec> build_schema() {
    FieldSpec version = choice("version", Need::required, {"1"}, true);
    FieldSpec phase = choice("phase", Need::required, {"training", "inference", "serving"}, true);
    FieldSpec xpu_type = choice("type", Need::expected, {"GPU", "TPU", "CPU"}, false);
    FieldSpec traces = field("traces", ValueKind::string_list, Need::expected);
    traces.choices = {"json", "nsys", "json_tpu", "kineto_trace", "sglang", "xla_trace", "tpu_profiler"};
    FieldSpec runtime = choice("runtime", Need::optional, {"shifter", "podman-hpc", "docker", "none"}, true);
    FieldSpec description = field("description", ValueKind::string, Need::expected);
    FieldSpec contributor = field("contributor", ValueKind::string, Need::expected);
    contributor.note = "a data point should say who collected it";
    FieldSpec executor = section("Model-executor", Need::expected, {
        section("framework", Need::required, {
            field("name", ValueKind::string, Need::required),
            field("compiler_tool_selection", ValueKind::string),
            field("version", ValueKind::string),
            env_block("env"),
        }),
        section("model_plan_parallelization", Need::required, {
            field("dp_replicate", ValueKind::positive_int, Need::required),
            field("dp_shard", ValueKind::positive_int, Need::required),
            field("tp", ValueKind::positive_int, Need::required),
            field("pp", ValueKind::positive_int, Need::required),
            field("cp", ValueKind::positive_int, Need::required),
            field("ep", ValueKind::positive_int),
            field("pp_mb", ValueKind::positive_int),
        }),
        section("communication_library", Need::expected, {
            field("name", ValueKind::string, Need::expected),
            field("version", ValueKind::string),
            env_block("env"),
        }),
        field("protocol_selection", ValueKind::string_list),
        section("expert_parallel", Need::optional, {
            field("eplb", ValueKind::boolean),
            field("mode", ValueKind::string),
            field("top_k", ValueKind::positive_int),
        }),
        field("serving", ValueKind::any),
    });
    executor.note = "the card says what ran but not how; it can be archived, not run";

    FieldSpec hardware = section("hardware", Need::expected, {
        section("network_topo", Need::expected, {
            field("topology", ValueKind::string, Need::expected),
            field("bandwidth_gbps", ValueKind::bandwidth, Need::expected),
        }),
        section("xpu_spec", Need::required, {
            xpu_type,
            field("model", ValueKind::string, Need::required),
            field("total_count", ValueKind::positive_int, Need::required),
            field("count_per_node", ValueKind::positive_int, Need::required),
            field("topology", ValueKind::string),
            field("memory_gb", ValueKind::number),
        }),
        field("driver_version", ValueKind::string, Need::expected),
    });
    hardware.note = "needed to run the card";

    std::vector<FieldSpec> model = {
        phase,
        field("moe", ValueKind::boolean, Need::expected),
        choice("granularity", Need::expected, {"model_fwd_bwd_pass", "model_fwd", "model_fwd_pass", "layer", "kernel"}, false),
        field("model_family", ValueKind::string, Need::required),
        choice("precision", Need::expected, {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "mixed"}, false),
        field("epochs", ValueKind::positive_int),
        field("iteration", ValueKind::positive_int),
        section("model_arch", Need::optional, model_arch_fields()),
    };
    for (const char* key : {"num_params", "num_params_embedding", "num_params_active", "num_layers", "num_heads", "head_dim"}) {
        model.push_back(moved(key, ValueKind::nonneg_int, "workload.model.model_arch"));
    }

    return {
        version,
        description,
        field("hf_url", ValueKind::string),
        field("trace_url", ValueKind::string),
        contributor,
        field("contact", ValueKind::string, Need::expected),
        section("workload", Need::required, {
            section("model", Need::required, model),
            section("data", Need::expected, {
                field("batch_size", ValueKind::positive_int),
                choice("batch_size_scope", Need::optional, {"global", "per_device", "per_replica", "per_rank", "local"}, false),
                field("seq_len", ValueKind::positive_int, Need::expected),
                field("input_len", ValueKind::positive_int),
                field("output_len", ValueKind::positive_int),
                field("dataset", ValueKind::string, Need::expected),
                field("max-model-len", ValueKind::positive_int),
                field("max-num-batched-tokens", ValueKind::positive_int),
                field("max-num-seqs", ValueKind::positive_int),
                field("max_tokens", ValueKind::positive_int),
                field("num_prompts", ValueKind::positive_int),
                field("request_rate", ValueKind::number),
            }),
            hardware,
        }),
        executor,
        section("metric_source", Need::expected, {
            traces,
            field("metrics_specific_trace", ValueKind::string_list),
        }),
        field("collection_notes", ValueKind::any),
        section("launch", Need::optional, {
            field("cluster", ValueKind::string),
            field("account", ValueKind::string),
            field("qos", ValueKind::string),
            field("partition", ValueKind::string),
            field("time_limit", ValueKind::string),
            field("constraint", ValueKind::string),
            section("container", Need::optional, {field("image", ValueKind::string), runtime}),
            section("source", Need::optional, {field("repo", ValueKind::string), field("ref", ValueKind::string)}),
            field("model", ValueKind::string),
            field("script", ValueKind::string),
            field("steps", ValueKind::positive_int),
            section("profile", Need::optional, {
                field("wait", ValueKind::nonneg_int),
                field("warmup", ValueKind::nonneg_int),
                field("active", ValueKind::positive_int),
            }),
            field("args", ValueKind::string_list),
            env_block("env"),
            section("tpu", Need::optional, {
                field("project", ValueKind::string),
                field("zone", ValueKind::string),
                field("name", ValueKind::string),
                field("runtime_version", ValueKind::string),
                field("spot", ValueKind::boolean),
            }),
        }),
    };
}

std::string text_at(const YAML::Node& root, const std::string& path) {
    return trim(scalar_text(find_node(root, path)));
}

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
    card.m_diagnostics = check_document(card.m_doc, card_schema(), {"Model-executor", "metric_source", "workload", "launch"});
    if (!card.m_diagnostics.has_errors()) {
        card.read_fields();
    }
    return card;
}

std::string WorkloadCard::name() const {
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
    launch.source_repo = text_at(root, "launch.source.repo");
    launch.source_ref = text_at(root, "launch.source.ref");
    launch.model = text_at(root, "launch.model");
    launch.steps = int_at(root, "launch.steps");
    if (find_node(root, "launch.profile").IsMap()) {
        ProfileWindow window;
        window.wait = int_at(root, "launch.profile.wait").value_or(window.wait);
        window.warmup = int_at(root, "launch.profile.warmup").value_or(window.warmup);
        window.active = int_at(root, "launch.profile.active").value_or(window.active);
        launch.profile = window;
    }
    launch.args = list_at(root, "launch.args");
    launch.env = env_at(root, "launch.env");
    launch.tpu_project = text_at(root, "launch.tpu.project");
    launch.tpu_zone = text_at(root, "launch.tpu.zone");
    launch.tpu_name = text_at(root, "launch.tpu.name");
    launch.tpu_runtime_version = text_at(root, "launch.tpu.runtime_version");
    read_bool(find_node(root, "launch.tpu.spot"), launch.tpu_spot);

    static const std::regex time_format(R"(^(\d+-)?\d{1,2}:\d{2}:\d{2}$|^\d+$)");
    if (!launch.time_limit.empty() && !std::regex_match(launch.time_limit, time_format)) {
        m_diagnostics.error(m_doc.location(find_node(root, "launch.time_limit"), "launch.time_limit"),
                            "launch.time_limit",
                            fmt::format("expected minutes, HH:MM:SS or D-HH:MM:SS, got {}", enquote(launch.time_limit)));
    }
}

} // namespace harness
