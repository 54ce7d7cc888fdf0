#include "adopt/adopt.hpp"

#include "card/yaml_document.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>

namespace harness {

namespace {

// The value as --set reads it: plain where YAML reads it back as the same string (emit keeps a
// quoted source quoted), double-quoted otherwise; in a flow list, flow indicators need quotes too.
std::string yaml_value(const std::string& text, bool in_flow = false) {
    const std::size_t digits = text.find_first_not_of("0123456789", text.rfind('-', 0) == 0 ? 1 : 0);
    const bool integer = !text.empty() && text != "-" && digits == std::string::npos;
    const bool decimal = digits != std::string::npos && digits > 0 && text[digits] == '.' && digits + 1 < text.size() &&
                         text.find_first_not_of("0123456789", digits + 1) == std::string::npos;
    const std::size_t lead = text.rfind('-', 0) == 0 ? 1 : 0;
    const bool octal_looking = text.size() > lead + 1 && text[lead] == '0' &&
                               std::isdigit(static_cast<unsigned char>(text[lead + 1])) != 0;
    if ((integer || decimal) && !octal_looking) { // 010 is octal to PyYAML: quoted below
        return text;
    }
    std::string plain = yaml_scalar_text(text);
    if (plain.front() == '"' || !in_flow || text.find_first_of(",[]{}") == std::string::npos) {
        return plain;
    }
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            quoted += '\\';
        }
        quoted += c;
    }
    return quoted + "\"";
}

std::string model_from_hf_url(const std::string& url) {
    // https://huggingface.co/ORG/NAME[/tree/main...]: the model id is ORG/NAME.
    for (const char* prefix : {"https://huggingface.co/", "http://huggingface.co/"}) {
        const std::string start = prefix;
        if (url.rfind(start, 0) != 0) {
            continue;
        }
        const std::size_t org = url.find('/', start.size());
        if (org == std::string::npos || org == start.size()) {
            return "";
        }
        const std::size_t end = url.find_first_of("/ \t", org + 1);
        const std::string id = url.substr(start.size(), end == std::string::npos ? std::string::npos : end - start.size());
        return id.size() > org + 1 - start.size() ? id : "";
    }
    return "";
}

bool same_value(const std::string& field, const std::string& card, const std::string& script) {
    const std::string a = to_lower(card);
    const std::string b = to_lower(script);
    if (a == b) {
        return true;
    }
    try {
        std::size_t used_a = 0;
        std::size_t used_b = 0;
        if (std::stod(a, &used_a) == std::stod(b, &used_b) && used_a == a.size() && used_b == b.size()) {
            return true;
        }
    } catch (const std::exception&) {
    }
    if (field == "Model-executor.framework.name") {
        return a.rfind(b, 0) == 0; // "torchtitan-0.1.0", "vllm v0.11"
    }
    if (field == "workload.data.dataset") {
        // The card names the data ("ShareGPT_V3_unfiltered_cleaned_split"), the script its loader ("sharegpt").
        return a.find(b) != std::string::npos ||
               (b == "random" && (a.empty() || a == "synthetic" || a == "dummy" || a.find("random") != std::string::npos));
    }
    return false;
}

// The card spells the vLLM limits either way (the corpus writes max-num-seqs; argparse's dest is
// max_num_seqs): a disagreement is checked, and the value set, where the card already has it.
std::string card_field(const YAML::Node& root, const std::string& field) {
    if (field.rfind("workload.data.max-", 0) == 0) {
        std::string underscored = field;
        std::replace(underscored.begin() + static_cast<long>(std::string("workload.data.").size()), underscored.end(), '-', '_');
        if (find_node(root, underscored).IsDefined() && !find_node(root, field).IsDefined()) {
            return underscored;
        }
    }
    return field;
}

class Merge {
public:
    explicit Merge(YamlDocument& doc) : m_doc(doc) {}

    void apply(const ScriptFact& fact, AdoptResult& result) {
        const std::string field = card_field(m_doc.root(), fact.field);
        if (field == "Model-executor.model_plan_parallelization.ep" && fact.option.rfind("--enable-expert-parallel", 0) == 0 &&
            to_lower(trim(scalar_text(find_node(m_doc.root(), "workload.model.moe")))) == "false") {
            // vLLM ignores the flag on a dense model: there are no experts to spread.
            result.notes.push_back({fact.where, "--enable-expert-parallel on a model the card says is not MoE: ep stays the card's"});
            return;
        }
        std::string card = trim(scalar_text(find_node(m_doc.root(), field)));
        if (field == "launch.model" && card.empty()) {
            card = model_from_hf_url(trim(scalar_text(find_node(m_doc.root(), "hf_url"))));
            if (!card.empty() && same_value(field, card, fact.value)) {
                return; // the default launch.model (from hf_url) is already what ran
            }
            if (!fact.value.empty() && (fact.value.front() == '/' || fact.value.front() == '.' || fact.value.front() == '~')) {
                result.notes.push_back({fact.where, fmt::format("{}: {} is a path on the contributor's machine; the card's "
                                                                "model stands",
                                                                fact.option, fact.value)});
                return;
            }
            if (!card.empty()) {
                result.disagreements.push_back({fact.where, "launch.model (from hf_url)", card, fact.value});
                m_doc.set(field + "=" + yaml_value(fact.value));
                return;
            }
        }
        if (card.empty()) {
            m_doc.set(field + "=" + yaml_value(fact.value));
            result.filled.push_back({field, fact.value, fact.where, fact.option});
        } else if (!same_value(field, card, fact.value)) {
            m_doc.set(field + "=" + yaml_value(fact.value));
            result.disagreements.push_back({fact.where, field, card, fact.value});
        }
    }

private:
    YamlDocument& m_doc;
};

void set_args(YamlDocument& doc, const std::vector<ScriptFact>& args, AdoptResult& result) {
    if (args.empty()) {
        return;
    }
    std::vector<std::string> words;
    const YAML::Node existing = find_node(doc.root(), "launch.args");
    if (existing.IsSequence()) {
        for (const auto& item : existing) {
            words.push_back(item.Scalar());
        }
    }
    std::string flow = "[";
    for (const std::string& word : words) {
        flow += yaml_value(word, true) + ", ";
    }
    for (const ScriptFact& arg : args) {
        flow += yaml_value(arg.value, true) + ", ";
        result.filled.push_back(arg);
    }
    flow.erase(flow.size() - 2);
    doc.set("launch.args=" + flow + "]");
}

/// MaxText's per_device_batch_size (a fact "@per_device_batch_size") as the card's global batch:
/// times the chips, from the script when it says them, else the card. Without a count, a note.
void per_device_batch(const YamlDocument& doc, std::vector<ScriptFact>& facts, AdoptResult& result) {
    const auto per_device = std::find_if(facts.begin(), facts.end(),
                                         [](const ScriptFact& fact) { return fact.field == "@per_device_batch_size"; });
    if (per_device == facts.end()) {
        return;
    }
    const ScriptFact fact = *per_device;
    facts.erase(per_device);
    const auto script_total = std::find_if(facts.begin(), facts.end(),
                                           [](const ScriptFact& f) { return f.field == "workload.hardware.xpu_spec.total_count"; });
    const std::string total = script_total != facts.end()
                                  ? script_total->value
                                  : trim(scalar_text(find_node(doc.root(), "workload.hardware.xpu_spec.total_count")));
    double chips = 0;
    double batch = 0;
    try {
        std::size_t used = 0;
        chips = std::stod(total, &used);
        chips = used == total.size() ? chips : 0;
        batch = std::stod(fact.value, &used) * chips;
        batch = used == fact.value.size() ? batch : 0;
    } catch (const std::exception&) {
        batch = 0;
    }
    if (!(batch >= 1) || batch != static_cast<double>(static_cast<long long>(batch)) || batch > 1e12) {
        result.notes.push_back(
            {fact.where, fmt::format("per_device_batch_size={}: the global batch is that times the chips, and "
                                     "the chips ({}) do not make a whole number of it; the card's batch_size stands",
                                     fact.value, total.empty() ? "not in the card" : total)});
        return;
    }
    facts.push_back({"workload.data.batch_size", std::to_string(static_cast<long long>(batch)), fact.where,
                     fmt::format("per_device_batch_size={} x {} chips", fact.value, total)});
}

} // namespace

AdoptResult adopt_card(const fs::path& card_path, const std::vector<fs::path>& scripts) {
    YamlDocument doc = YamlDocument::load(card_path);
    const YAML::Node& root = doc.root();
    if (!root.IsMap() || !(root["workload"].IsMap() || root["Model-executor"].IsMap() || root["version"].IsDefined())) {
        throw input_error(fmt::format("{}: not a workload card (no workload:, Model-executor: or version:)", card_path.string()));
    }
    AdoptResult result;
    std::vector<std::string> unknown;
    std::vector<ScriptFact> facts;
    std::vector<ScriptFact> args;
    std::vector<ScriptFact> env;
    for (const fs::path& script : scripts) {
        const std::string text = read_file(script);
        if (text.find('\0') != std::string::npos) {
            throw input_error(fmt::format("{}: not a text file (a launch script or TorchTitan TOML)", script.string()));
        }
        ScriptFacts read = read_script_facts(text, script.string());
        if (read.recognized.empty()) {
            // One script of several may be notes or a wrapper (run.txt beside the TOML it names):
            // what the others say still stands. None recognized at all is an error, below.
            unknown.push_back(script.string());
        }
        for (const std::string& what : read.recognized) {
            result.recognized.push_back(script.string() + ": " + what);
        }
        facts.insert(facts.end(), read.facts.begin(), read.facts.end());
        args.insert(args.end(), read.args.begin(), read.args.end());
        env.insert(env.end(), read.env.begin(), read.env.end());
        result.unresolved.insert(result.unresolved.end(), read.unresolved.begin(), read.unresolved.end());
        result.notes.insert(result.notes.end(), read.notes.begin(), read.notes.end());
    }
    const std::string known = "vllm serve, vllm bench serve/latency, benchmark_serving.py, python -m "
                              "sglang.bench_one_batch/launch_server/bench_serving, torchrun (TorchTitan, Megatron pretrain_gpt.py), "
                              "MaxText train.py, #SBATCH, bash -c or gcloud ... ssh --command with one of these, "
                              "a TorchTitan .toml";
    if (unknown.size() == scripts.size()) {
        throw input_error(
            fmt::format("{}: name{} no command adopt knows ({})", join(unknown, ", "), unknown.size() == 1 ? "s" : "", known));
    }
    for (const std::string& script : unknown) {
        result.notes.push_back({script, fmt::format("names no command adopt knows ({}); read the other scripts", known)});
    }
    per_device_batch(doc, facts, result);
    // One value per field: the first script that says it; a later one that says otherwise is noted.
    std::map<std::string, ScriptFact> first;
    std::vector<ScriptFact> ordered;
    for (const ScriptFact& fact : facts) {
        const auto [at, inserted] = first.emplace(fact.field, fact);
        if (inserted) {
            ordered.push_back(fact);
        } else if (!same_value(fact.field, at->second.value, fact.value)) {
            result.notes.push_back({fact.where, fmt::format("{}: {} here, {} at {}; following {}", fact.field, fact.value,
                                                            at->second.value, at->second.where, at->second.where)});
        }
    }
    Merge merge(doc);
    for (const ScriptFact& fact : ordered) {
        merge.apply(fact, result);
    }
    for (const ScriptFact& fact : env) {
        merge.apply(fact, result);
    }
    set_args(doc, args, result);
    result.card_yaml = doc.emit();
    return result;
}

} // namespace harness
