#include "adopt/adopt.hpp"
#include "cli/commands.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct AdoptOptions {
    std::string card;
    std::vector<std::string> scripts;
    bool json = false;
};

// Script words reach the terminal: control characters escaped, a whole embedded program cut short.
std::string shown(const std::string& text) {
    const std::string safe = terminal_text(text);
    return safe.size() > 160 ? safe.substr(0, 157) + "..." : safe;
}

Json findings_json(const std::vector<ScriptFinding>& findings) {
    Json out = Json::array();
    for (const ScriptFinding& finding : findings) {
        out.push_back(Json(Json::Object{{"where", finding.where}, {"message", finding.message}}));
    }
    return out;
}

Json adopt_json(const AdoptResult& result) {
    Json disagreements = Json::array();
    for (const Disagreement& d : result.disagreements) {
        disagreements.push_back(Json(Json::Object{{"where", d.where}, {"field", d.field}, {"card", d.card}, {"script", d.script}}));
    }
    Json filled = Json::array();
    for (const ScriptFact& fact : result.filled) {
        filled.push_back(
            Json(Json::Object{{"where", fact.where}, {"field", fact.field}, {"value", fact.value}, {"option", fact.option}}));
    }
    Json out = Json::object();
    out["card_yaml"] = result.card_yaml;
    out["recognized"] = json_string_array(result.recognized);
    out["filled"] = std::move(filled);
    out["disagreements"] = std::move(disagreements);
    out["unresolved"] = findings_json(result.unresolved);
    out["notes"] = findings_json(result.notes);
    return out;
}

int run_adopt(const AdoptOptions& options) {
    const AdoptResult result = adopt_card(options.card, {options.scripts.begin(), options.scripts.end()});
    if (options.json) {
        std::cout << adopt_json(result).dump() << "\n";
        return k_exit_ok;
    }
    for (const Disagreement& d : result.disagreements) {
        std::cerr << fmt::format("warning: {}: {}: card says {}, the script ran {}; following the script\n", shown(d.where), d.field,
                                 shown(d.card), shown(d.script));
    }
    for (const ScriptFinding& finding : result.unresolved) {
        std::cerr << fmt::format("warning: {}: {}\n", shown(finding.where), shown(finding.message));
    }
    if (g_verbosity == Verbosity::verbose) {
        for (const std::string& what : result.recognized) {
            std::cerr << fmt::format("note: {}\n", shown(what));
        }
        for (const ScriptFact& fact : result.filled) {
            std::cerr << fmt::format("note: {}: {}: the card is silent, the script ran {}\n", shown(fact.where), shown(fact.field),
                                     shown(fact.value));
        }
        for (const ScriptFinding& finding : result.notes) {
            std::cerr << fmt::format("note: {}: {}\n", shown(finding.where), shown(finding.message));
        }
    }
    std::cout << result.card_yaml;
    return k_exit_ok;
}

} // namespace

void add_adopt(CLI::App& sub, Action& action) {
    auto options = std::make_shared<AdoptOptions>();
    sub.add_option("card", options->card, "the archived workload card")->required()->type_name("CARD");
    sub.add_option("--script", options->scripts, "a script the contributor ran (bash, or a TorchTitan .toml); repeatable")
        ->required()
        ->type_name("FILE");
    sub.add_flag("--json", options->json,
                 "print one JSON object instead of the card: {card_yaml, recognized, filled [{where, field, value, option}], "
                 "disagreements [{where, field, card, script}], unresolved [{where, message}], notes [{where, message}]}");
    sub.footer("Prints the card on stdout, completed so that render runs what the scripts ran: card fields the\n"
               "card was silent on, launch.model, launch.steps, launch.dataset_path, launch.env (VLLM_*, NCCL_*...)\n"
               "and launch.args (engine options the template does not render, e.g. --enforce-eager).\n"
               "The scripts are parsed, never executed: variables, ${VAR:-default}, positional defaults\n"
               "(${1:-x}), continuations and arrays are followed; a value that needs $(...) or a variable\n"
               "set outside the script is reported on stderr with FILE:LINE and left to the card.\n"
               "Where card and script disagree, stderr says\n"
               "  warning: FILE:LINE: FIELD: card says X, the script ran Y; following the script\n"
               "Recognized: vllm serve (and python -m vllm.entrypoints.openai.api_server), vllm bench serve,\n"
               "benchmark_serving.py / benchmark.py clients, vllm bench latency, python -m sglang.bench_one_batch,\n"
               "sglang.launch_server and sglang.bench_serving, torchrun (with TorchTitan's dotted options or Megatron's\n"
               "pretrain_gpt.py: degrees, batch, seq-length, train-iters, --data-path; the rest as launch.args),\n"
               "MaxText train.py (KEY=VALUE: model_name,\n"
               "per_device_batch_size x the chips, max_target_length, steps, ici_*_parallelism), #SBATCH lines,\n"
               "TorchTitan TOML, and any of these inside `bash -c '...'` (srun ... shifter bash -c) or\n"
               "`gcloud ... tpu-vm ssh --command \"...\"` (what ran in the container or on the VM).\n"
               "Of several scripts, one that names none of these (notes, a wrapper) is a note; none at all is an error.\n"
               "-v also lists the fields filled and the options left out.\n"
               "Examples:\n"
               "  ccl-harness adopt row/row.yaml --script row/server.sh --script row/client.sh > adopted.yaml\n"
               "  ccl-harness adopt row/row.yaml --script row/llama3_8b.toml > adopted.yaml\n"
               "  ccl-harness validate --strict adopted.yaml && ccl-harness render adopted.yaml --out rendered");
    sub.callback([options, &action] { action = [options] { return run_adopt(*options); }; });
}

} // namespace harness::cli
