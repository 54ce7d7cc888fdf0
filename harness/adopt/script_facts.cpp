#include "adopt/script_facts.hpp"

#include "adopt/bash_words.hpp"
#include "adopt/torchtitan_toml.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

namespace harness {

namespace {

constexpr const char* k_par = "Model-executor.model_plan_parallelization.";

/// The card field a framework option sets, and whether it takes a whole number (Megatron's and
/// MaxText's option tables).
struct FieldOf {
    const char* field;
    bool integer;
};

struct Option {
    std::string name; ///< without dashes, '_' as '-'
    std::string spelled;
    const BashWord* flag = nullptr;
    std::string value;
    const BashWord* value_word = nullptr; ///< null for a flag
};

// Flags that take no value: without the list, `--enforce-eager MODEL` would read MODEL as its value.
bool is_flag(const std::string& name) {
    static const std::set<std::string> flags = {"enforce-eager",
                                                "enable-expert-parallel",
                                                "trust-remote-code",
                                                "disable-log-requests",
                                                "disable-log-stats",
                                                "save-result",
                                                "profile",
                                                "enable-prefix-caching",
                                                "disable-custom-all-reduce",
                                                "enable-eplb",
                                                "no-enable-prefix-caching",
                                                "disable-cuda-graph",
                                                "enable-dp-attention"};
    return flags.count(name) != 0;
}

std::string normalized(std::string name) {
    name.erase(0, name.find_first_not_of('-'));
    std::replace(name.begin(), name.end(), '_', '-');
    return name;
}

std::vector<Option> options_from(const std::vector<BashWord>& words, std::size_t from, std::vector<const BashWord*>& positionals) {
    std::vector<Option> out;
    for (std::size_t i = from; i < words.size(); ++i) {
        const BashWord& word = words[i];
        if (word.text.size() < 2 || word.text.front() != '-' || word.text.find_first_not_of('-') == std::string::npos) {
            positionals.push_back(&word);
            continue;
        }
        Option option;
        option.flag = &word;
        const std::size_t eq = word.text.find('=');
        option.spelled = word.text.substr(0, eq);
        option.name = normalized(option.spelled);
        if (eq != std::string::npos) {
            option.value = word.text.substr(eq + 1);
            option.value_word = &word;
        } else if (!is_flag(option.name) && i + 1 < words.size() &&
                   (words[i + 1].text.empty() || words[i + 1].text.front() != '-' ||
                    (words[i + 1].text.size() > 1 && std::isdigit(static_cast<unsigned char>(words[i + 1].text[1])) != 0))) {
            option.value = words[i + 1].text;
            option.value_word = &words[++i];
        }
        out.push_back(option);
    }
    return out;
}

std::string basename_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// At most 9 digits: a count, never a number std::stoll could overflow on.
bool is_integer(const std::string& text) {
    return !text.empty() && text.size() <= 9 &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// The recognizers write into one ScriptFacts; `where` is FILE:LINE of the word that said it.
class Reader {
public:
    Reader(std::string name, ScriptFacts& out) : m_name(std::move(name)), m_out(out) {}

    std::string where(int line) const { return fmt::format("{}:{}", m_name, line); }

    /// The option's value as a fact, unless it needed something the script does not say.
    bool fact(const std::string& field, const Option& option, bool integer) {
        const BashWord& word = option.value_word != nullptr ? *option.value_word : *option.flag;
        if (option.value_word == nullptr) {
            m_out.notes.push_back({where(word.line), fmt::format("{} has no value", option.spelled)});
            return false;
        }
        return value_fact(field, option.value, word, option.spelled, integer);
    }

    bool value_fact(const std::string& field, const std::string& value, const BashWord& word, const std::string& spelled,
                    bool integer) {
        if (!word.unresolved.empty()) {
            m_out.unresolved.push_back({where(word.line), fmt::format("{} {}: depends on {}, which only running the script "
                                                                      "would tell; not guessed",
                                                                      spelled, value, word.unresolved)});
            return false;
        }
        if (integer && !is_integer(value)) {
            m_out.notes.push_back({where(word.line), fmt::format("{} {}: not a whole number; left out", spelled, value)});
            return false;
        }
        m_out.facts.push_back({field, value, where(word.line), spelled});
        return true;
    }

    void plain_fact(const std::string& field, const std::string& value, int line, const std::string& spelled) {
        m_out.facts.push_back({field, value, where(line), spelled});
    }

    void arg(const Option& option) {
        if ((option.value_word != nullptr && !option.value_word->unresolved.empty()) || !option.flag->unresolved.empty()) {
            const BashWord& word = option.value_word != nullptr ? *option.value_word : *option.flag;
            m_out.unresolved.push_back({where(word.line), fmt::format("{} {}: depends on {}; left out of launch.args", option.spelled,
                                                                      option.value, word.unresolved)});
            return;
        }
        m_out.args.push_back({"launch.args", option.flag->text, where(option.flag->line), option.spelled});
        if (option.value_word != nullptr && option.value_word != option.flag) {
            m_out.args.push_back({"launch.args", option.value, where(option.value_word->line), option.spelled});
        }
    }

    void note(int line, const std::string& message) { m_out.notes.push_back({where(line), message}); }
    /// One word into launch.args as written (MaxText's KEY=VALUE), unless it needed what only running tells.
    void arg_word(const BashWord& word, const std::string& spelled) {
        if (!word.unresolved.empty()) {
            m_out.unresolved.push_back(
                {where(word.line), fmt::format("{}: depends on {}; left out of launch.args", word.text, word.unresolved)});
            return;
        }
        m_out.args.push_back({"launch.args", word.text, where(word.line), spelled});
    }
    void recognized(const std::string& what) { m_out.recognized.push_back(what); }

private:
    std::string m_name;
    ScriptFacts& m_out;
};

struct Parallel {
    long long tp = 1;
    long long pp = 1;
    long long dp = 1;
    bool expert = false;
    bool tp_seen = false;
    bool pp_seen = false;
    bool dp_seen = false;
    int line = 0;
};

void parallel_facts(Reader& reader, const Parallel& par, const std::string& command) {
    const long long ep = par.expert ? checked_product({par.tp, par.dp}) : 1;
    const long long total = checked_product({par.tp, par.pp, par.dp});
    if (ep < 1 || total < 1) {
        reader.note(par.line, "parallel degrees too large to multiply: ep and total_count left to the card");
        return;
    }
    reader.plain_fact(std::string(k_par) + "ep", std::to_string(ep), par.line,
                      par.expert ? "--enable-expert-parallel (ep = tp x dp)" : command + " without --enable-expert-parallel");
    reader.plain_fact("workload.hardware.xpu_spec.total_count", std::to_string(total), par.line, command + " (tp x pp x dp)");
}

long long as_int(const std::string& text) { return is_integer(text) ? std::stoll(text) : 1; }

// vllm serve / api_server, vllm bench latency, sglang bench_one_batch / launch_server: the engine.
void engine(Reader& reader, const BashCommand& command, std::size_t from, const std::string& kind, const std::string& model) {
    std::vector<const BashWord*> positionals;
    const std::vector<Option> options = options_from(command.words, from, positionals);
    const bool vllm = kind.rfind("vllm", 0) == 0;
    const bool serve = kind == "vllm serve" || kind == "sglang launch_server";
    reader.recognized(kind);
    reader.plain_fact("Model-executor.framework.name", vllm ? "vllm" : "sglang", command.line, kind);
    if (kind == "sglang launch_server") {
        // The card's phase decides: upstream's generated run.sh files start a server for rows whose
        // contributors ran bench_one_batch (their cards say inference), so the script alone does not.
        reader.note(command.line, "sglang.launch_server: the phase stays the card's; workload.model.phase: serving "
                                  "renders sglang.launch_server and sglang.bench_serving, otherwise sglang.bench_one_batch");
    } else {
        reader.plain_fact("workload.model.phase", serve ? "serving" : "inference", command.line, kind);
    }
    if (!model.empty() && !positionals.empty()) {
        reader.value_fact("launch.model", positionals.front()->text, *positionals.front(), kind + " MODEL", false);
    }
    Parallel par;
    par.line = command.line;
    static const std::map<std::string, std::string> data_fields = {
        {"max-model-len", "workload.data.max-model-len"}, {"max-num-batched-tokens", "workload.data.max-num-batched-tokens"},
        {"max-num-seqs", "workload.data.max-num-seqs"},   {"batch-size", "workload.data.batch_size"},
        {"input-len", "workload.data.input_len"},         {"output-len", "workload.data.output_len"},
    };
    // What the harness's template renders itself (or the run owns): neither a field nor an arg.
    static const std::set<std::string> owned = {
        "host",           "port",          "output-json", "profile", "num-iters-warmup", "run-name", "result-filename",
        "profile-prefix", "profile-stage", "log-level"};
    for (const Option& option : options) {
        const std::string& name = option.name;
        const bool latency_only = kind == "vllm bench latency" || kind == "sglang bench_one_batch";
        if (name == "model" || name == "model-path") {
            reader.fact("launch.model", option, false);
        } else if (name == "tensor-parallel-size" || name == "tp" || name == "tp-size") {
            if (reader.fact(std::string(k_par) + "tp", option, true)) {
                par.tp = as_int(option.value);
                par.tp_seen = true;
            }
        } else if (name == "pipeline-parallel-size" || name == "pp" || name == "pp-size") {
            if (reader.fact(std::string(k_par) + "pp", option, true)) {
                par.pp = as_int(option.value);
                par.pp_seen = true;
            }
        } else if (name == "data-parallel-size" || name == "dp" || name == "dp-size") {
            if (reader.fact(std::string(k_par) + "dp_replicate", option, true)) {
                par.dp = as_int(option.value);
                par.dp_seen = true;
            }
        } else if (name == "enable-expert-parallel") {
            par.expert = true;
        } else if ((name == "ep-size" || name == "ep") && !vllm) {
            if (option.value_word != nullptr) {
                reader.fact(std::string(k_par) + "ep", option, true);
            }
        } else if (data_fields.count(name) != 0 && (name.rfind("max-", 0) == 0 ? kind == "vllm serve" : latency_only || serve)) {
            // The engine limits are rendered for vllm serve only; elsewhere they stay launch.args.
            reader.fact(data_fields.at(name), option, true);
        } else if (name == "num-iters" && kind == "vllm bench latency") {
            reader.fact("launch.steps", option, true);
        } else if (owned.count(name) != 0) {
            reader.note(option.flag->line, fmt::format("{}: the rendered run sets its own", option.spelled));
        } else if (vllm || kind == "sglang bench_one_batch") {
            reader.arg(option);
        } else {
            reader.note(option.flag->line, fmt::format("{}: not carried (the harness renders sglang's bench_one_batch, "
                                                       "not its server)",
                                                       option.spelled));
        }
    }
    if (vllm) {
        // What the script left out ran at vLLM's default of 1, and the render must do the same.
        const std::pair<bool, const char*> defaults[] = {{par.tp_seen, "tp"}, {par.pp_seen, "pp"}, {par.dp_seen, "dp_replicate"}};
        for (const auto& [seen, key] : defaults) {
            if (!seen) {
                reader.plain_fact(std::string(k_par) + key, "1", command.line, kind + " (its default)");
            }
        }
        reader.plain_fact(std::string(k_par) + "dp_shard", "1", command.line, kind + " (vllm's dp is replicas)");
        parallel_facts(reader, par, kind);
    }
}

// vllm bench serve, benchmark_serving.py, sglang.bench_serving: the client's load.
void client(Reader& reader, const BashCommand& command, std::size_t from, const std::string& kind) {
    std::vector<const BashWord*> positionals;
    const std::vector<Option> options = options_from(command.words, from, positionals);
    reader.recognized(kind);
    static const std::map<std::string, std::pair<std::string, bool>> fields = {
        {"dataset-name", {"workload.data.dataset", false}},
        {"dataset-path", {"launch.dataset_path", false}},
        {"num-prompts", {"workload.data.num_prompts", true}},
        {"request-rate", {"workload.data.request_rate", false}},
        {"random-input-len", {"workload.data.input_len", true}},
        {"random-input", {"workload.data.input_len", true}},
        {"input-len", {"workload.data.input_len", true}},
        {"random-output-len", {"workload.data.output_len", true}},
        {"random-output", {"workload.data.output_len", true}},
        {"output-len", {"workload.data.output_len", true}},
        {"sharegpt-output-len", {"workload.data.output_len", true}},
        {"model", {"launch.model", false}},
    };
    static const std::set<std::string> owned = {"backend",    "base-url",        "host",   "port", "endpoint", "save-result",
                                                "result-dir", "result-filename", "profile"};
    for (const Option& option : options) {
        const auto field = fields.find(option.name);
        if (field != fields.end()) {
            reader.fact(field->second.first, option, field->second.second);
        } else if (owned.count(option.name) == 0) {
            reader.note(option.flag->line, fmt::format("{}: a client option; the rendered client does not pass it", option.spelled));
        }
    }
}

// Megatron-LM's pretrain_gpt.py options (docs/contracts/megatron-lm-core_v0.15.3.yaml): the
// degrees, batch, length, steps and a preprocessed --data-path become card fields; --mock-data
// says the data was synthetic. The rest (architecture, optimizer) goes to launch.args as written,
// after what the template renders, so that Megatron's argparse takes the script's (the last wins).
void megatron(Reader& reader, const BashCommand& command, std::size_t from) {
    reader.recognized("megatron pretrain_gpt.py");
    reader.plain_fact("Model-executor.framework.name", "megatron-lm", command.line, "pretrain_gpt.py");
    static const std::map<std::string, FieldOf> keys = {
        {"tensor-model-parallel-size", {"Model-executor.model_plan_parallelization.tp", true}},
        {"pipeline-model-parallel-size", {"Model-executor.model_plan_parallelization.pp", true}},
        {"context-parallel-size", {"Model-executor.model_plan_parallelization.cp", true}},
        {"expert-model-parallel-size", {"Model-executor.model_plan_parallelization.ep", true}},
        {"micro-batch-size", {"Model-executor.model_plan_parallelization.pp_mb", true}},
        {"global-batch-size", {"workload.data.batch_size", true}},
        {"seq-length", {"workload.data.seq_len", true}},
        {"train-iters", {"launch.steps", true}},
        {"data-path", {"launch.dataset_path", false}},
    };
    // What templates/megatron-lm renders from the plan (the profiler's window, the data's reader,
    // the position embeddings that follow seq_len): the script's values would fight it.
    static const std::set<std::string> rendered = {
        "max-position-embeddings", "tokenizer-type",     "tokenizer-model",  "split",         "data-cache-path", "profile",
        "use-pytorch-profiler",    "profile-step-start", "profile-step-end", "profile-ranks", "tensorboard-dir", "vocab-size"};
    std::vector<const BashWord*> positionals;
    for (const Option& option : options_from(command.words, from, positionals)) {
        if (const auto found = keys.find(option.name); found != keys.end()) {
            if (reader.fact(found->second.field, option, found->second.integer) && option.name == "data-path") {
                reader.note(option.flag->line, fmt::format("--data-path {}: the contributor's preprocessed PREFIX on their "
                                                           "cluster; point launch.dataset_path at your copy of it",
                                                           option.value));
            }
        } else if (option.name == "mock-data") {
            reader.plain_fact("workload.data.dataset", "synthetic", option.flag->line, option.spelled);
        } else if (option.name == "bf16" || option.name == "fp16") {
            reader.plain_fact("workload.model.precision", option.name, option.flag->line, option.spelled);
        } else if (rendered.count(option.name) != 0) {
            reader.note(option.flag->line, fmt::format("{}: the rendered run sets its own", option.spelled));
        } else {
            // The architecture and optimizer: what ran, and what the template does not render.
            reader.arg(option);
        }
    }
}

void torchrun(Reader& reader, const BashCommand& command, std::size_t from) {
    std::vector<const BashWord*> positionals;
    std::size_t script = from;
    // torchrun's own options end at the training script; what follows are the script's.
    for (; script < command.words.size(); ++script) {
        const std::string& text = command.words[script].text;
        if (text.size() > 3 && (text.compare(text.size() - 3, 3, ".py") == 0)) {
            break;
        }
        if (text == "-m" && script + 1 < command.words.size()) {
            ++script;
            break;
        }
    }
    const std::vector<BashWord> launcher(command.words.begin() + static_cast<long>(from),
                                         command.words.begin() + static_cast<long>(std::min(script, command.words.size())));
    reader.recognized("torchrun");
    std::string per_node;
    std::string nodes;
    for (const Option& option : options_from(launcher, 0, positionals)) {
        if (option.name == "nproc-per-node" && reader.fact("workload.hardware.xpu_spec.count_per_node", option, true)) {
            per_node = option.value;
        } else if (option.name == "nnodes" && option.value_word != nullptr && is_integer(option.value) &&
                   option.value_word->unresolved.empty()) {
            nodes = option.value;
        }
    }
    if (!per_node.empty() && !nodes.empty()) {
        reader.plain_fact("workload.hardware.xpu_spec.total_count", std::to_string(checked_product({as_int(per_node), as_int(nodes)})),
                          command.line, "--nnodes x --nproc-per-node");
    }
    positionals.clear();
    if (script < command.words.size() && basename_of(command.words[script].text) == "pretrain_gpt.py") {
        megatron(reader, command, script + 1);
        return;
    }
    // TorchTitan's command-line overrides (--training.steps 20) use the TOML's names.
    if (script < command.words.size()) {
        for (const Option& option : options_from(command.words, script + 1, positionals)) {
            const std::string dotted = option.spelled.substr(std::min(option.spelled.find_first_not_of('-'), option.spelled.size()));
            if (const TorchtitanKey* key = torchtitan_key(dotted); key != nullptr) {
                reader.fact(key->field, option, key->integer);
            }
        }
    }
}

void sbatch(Reader& reader, const BashCommand& command) {
    std::vector<const BashWord*> positionals;
    std::string nodes;
    std::string per_node;
    for (const Option& option : options_from(command.words, 1, positionals)) {
        const std::string& name = option.name;
        if ((name == "N" || name == "nodes") && option.value_word != nullptr && is_integer(option.value)) {
            nodes = option.value;
        } else if (name == "gpus-per-node" && reader.fact("workload.hardware.xpu_spec.count_per_node", option, true)) {
            per_node = option.value;
        } else if (name == "A" || name == "account" || name == "q" || name == "qos") {
            // The contributor's allocation, not the workload's: the adopter's own comes from defaults.yaml.
            reader.note(option.flag->line, fmt::format("{}: the contributor's site fact; not carried", option.spelled));
        } else if (name == "t" || name == "time") {
            reader.fact("launch.time_limit", option, false);
        } else if (name == "C" || name == "constraint") {
            reader.fact("launch.constraint", option, false);
        }
    }
    if (!nodes.empty()) {
        reader.recognized("#SBATCH");
        reader.plain_fact("@nodes", nodes, command.line, "#SBATCH --nodes");
    }
}

// MaxText's train.py: argv[1] the config file, then KEY=VALUE overrides (docs/contracts/
// maxtext-tpu-recipes-v0.1.4.yaml, MaxText/pyconfig.py:396-402). The keys the card has fields
// for become facts; per_device_batch_size becomes the global batch once the chips are known
// (adopt.cpp); model_name goes to launch.args, where the maxtext plan reads it.
void maxtext(Reader& reader, const BashCommand& command, std::size_t from) {
    reader.recognized("maxtext train");
    static const std::map<std::string, FieldOf> keys = {
        {"max_target_length", {"workload.data.seq_len", true}},
        {"steps", {"launch.steps", true}},
        {"per_device_batch_size", {"@per_device_batch_size", false}},
        {"ici_data_parallelism", {"Model-executor.model_plan_parallelization.dp_replicate", true}},
        {"ici_fsdp_parallelism", {"Model-executor.model_plan_parallelization.dp_shard", true}},
        {"ici_tensor_parallelism", {"Model-executor.model_plan_parallelization.tp", true}},
        {"ici_expert_parallelism", {"Model-executor.model_plan_parallelization.ep", true}},
        {"ici_pipeline_parallelism", {"Model-executor.model_plan_parallelization.pp", true}},
        {"ici_context_parallelism", {"Model-executor.model_plan_parallelization.cp", true}},
    };
    // Not keys of MaxText/configs/base.yml at the pinned ref: pyconfig.py:406-410 refuses them.
    static const std::set<std::string> refused = {"ici_mesh_shape", "enable_profiler", "profile_dir"};
    for (std::size_t i = from; i < command.words.size(); ++i) {
        const BashWord& word = command.words[i];
        const std::size_t eq = word.text.find('=');
        if (eq == std::string::npos || eq == 0) {
            continue;
        }
        const std::string key = word.text.substr(0, eq);
        const std::string value = word.text.substr(eq + 1);
        if (const auto found = keys.find(key); found != keys.end()) {
            reader.value_fact(found->second.field, value, word, key, found->second.integer);
        } else if (key == "model_name") {
            reader.arg_word(word, key);
        } else if (refused.count(key) != 0) {
            reader.note(word.line, fmt::format("{}: not a MaxText option at tpu-recipes-v0.1.4 (pyconfig.py:406-410 refuses a key "
                                               "that base.yml lacks), so the script could not have run with it; left out",
                                               key));
        } else {
            reader.note(word.line, fmt::format("{}: left out (adopt carries model_name, per_device_batch_size, max_target_length, "
                                               "steps and ici_*_parallelism; add it to launch.args as {} if the run needs it)",
                                               word.text, word.text));
        }
    }
}

void recognize(Reader& reader, const BashCommand& command) {
    const std::vector<BashWord>& w = command.words;
    if (!w.empty() && w.front().text == "#SBATCH") {
        sbatch(reader, command);
        return;
    }
    auto text = [&](std::size_t i) { return i < w.size() ? w[i].text : std::string(); };
    for (std::size_t i = 0; i < w.size(); ++i) {
        const std::string base = basename_of(w[i].text);
        const std::string module = text(i) == "-m" ? text(i + 1) : "";
        if ((base == "vllm" && text(i + 1) == "serve")) {
            engine(reader, command, i + 2, "vllm serve", "positional");
            return;
        }
        if (module == "vllm.entrypoints.openai.api_server") {
            engine(reader, command, i + 2, "vllm serve", "");
            return;
        }
        const bool vllm_cli = base == "vllm" || module == "vllm.entrypoints.cli.main";
        const std::size_t after_cli = base == "vllm" ? i + 1 : i + 2;
        if (vllm_cli && text(after_cli) == "bench" && text(after_cli + 1) == "serve") {
            client(reader, command, after_cli + 2, "vllm bench serve");
            return;
        }
        if (vllm_cli && text(after_cli) == "bench" && text(after_cli + 1) == "latency") {
            engine(reader, command, after_cli + 2, "vllm bench latency", "");
            return;
        }
        if (module == "vllm.entrypoints.benchmark_serving" || base == "benchmark_serving.py" ||
            (base == "benchmark.py" && std::any_of(w.begin(), w.end(), [](const BashWord& word) {
                 return word.text == "--dataset-name" || word.text == "--num-prompts";
             }))) {
            client(reader, command, i + (module.empty() ? 1 : 2), "vllm benchmark_serving");
            return;
        }
        if (base == "benchmark_latency.py") {
            engine(reader, command, i + 1, "vllm bench latency", "");
            return;
        }
        if (module == "sglang.bench_one_batch" || module == "sglang.launch_server") {
            engine(reader, command, i + 2, module == "sglang.launch_server" ? "sglang launch_server" : "sglang bench_one_batch", "");
            return;
        }
        if (module == "sglang.bench_serving") {
            client(reader, command, i + 2, "sglang bench_serving");
            return;
        }
        if (module == "MaxText.train" || (base == "train.py" && ends_with(text(i + 1), "base.yml"))) {
            maxtext(reader, command, module.empty() ? i + 2 : i + 3);
            return;
        }
        if (base == "torchrun" || module == "torch.distributed.run" || module == "torch.distributed.launch") {
            torchrun(reader, command, module.empty() ? i + 1 : i + 2);
            return;
        }
    }
}

bool carried_env(const std::string& name) {
    for (const char* prefix : {"VLLM_", "NCCL_", "SGLANG_", "PYTORCH_", "TORCH_", "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_NUM_THREADS"}) {
        if (name.rfind(prefix, 0) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace

ScriptFacts read_script_facts(const std::string& text, const std::string& display_name) {
    ScriptFacts out;
    const std::string lower = display_name.size() > 5 ? display_name.substr(display_name.size() - 5) : "";
    if (lower == ".toml") {
        read_torchtitan_toml(text, display_name, out);
        return out;
    }
    Reader reader(display_name, out);
    const BashScript script = split_bash(text);
    for (const BashCommand& command : script.commands) {
        recognize(reader, command);
    }
    for (const auto& [name, word] : script.exports) {
        if (!carried_env(name)) {
            continue;
        }
        if (!word.unresolved.empty()) {
            out.unresolved.push_back(
                {reader.where(word.line), fmt::format("export {}: depends on {}; left out of launch.env", name, word.unresolved)});
        } else {
            out.env.push_back({"launch.env." + name, word.text, reader.where(word.line), "export " + name});
        }
    }
    // #SBATCH --nodes with --gpus-per-node (or torchrun's) says the job's accelerator count.
    std::string nodes;
    std::string per_node;
    for (const ScriptFact& fact : out.facts) {
        nodes = fact.field == "@nodes" ? fact.value : nodes;
        per_node = fact.field == "workload.hardware.xpu_spec.count_per_node" ? fact.value : per_node;
    }
    if (!nodes.empty() && !per_node.empty()) {
        const bool has_total = std::any_of(out.facts.begin(), out.facts.end(), [](const ScriptFact& fact) {
            return fact.field == "workload.hardware.xpu_spec.total_count";
        });
        if (!has_total) {
            const auto at = std::find_if(out.facts.begin(), out.facts.end(),
                                         [](const ScriptFact& fact) { return fact.field == "@nodes"; });
            out.facts.push_back({"workload.hardware.xpu_spec.total_count",
                                 std::to_string(checked_product({as_int(nodes), as_int(per_node)})), at->where,
                                 "#SBATCH --nodes x --gpus-per-node"});
        }
    }
    out.facts.erase(std::remove_if(out.facts.begin(), out.facts.end(), [](const ScriptFact& fact) { return fact.field == "@nodes"; }),
                    out.facts.end());
    return out;
}

} // namespace harness
