#include "adopt/adopt.hpp"
#include "adopt/bash_words.hpp"
#include "adopt/script_facts.hpp"
#include "card/yaml_document.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace harness;

namespace {

std::vector<std::string> texts(const BashCommand& command) {
    std::vector<std::string> out;
    for (const BashWord& word : command.words) {
        out.push_back(word.text);
    }
    return out;
}

std::string fact(const ScriptFacts& facts, const std::string& field) {
    for (const ScriptFact& f : facts.facts) {
        if (f.field == field) {
            return f.value + " @" + f.where;
        }
    }
    return "";
}

std::string value(const ScriptFacts& facts, const std::string& field) {
    const std::string with_where = fact(facts, field);
    return with_where.substr(0, with_where.find(" @"));
}

std::vector<std::string> args(const ScriptFacts& facts) {
    std::vector<std::string> out;
    for (const ScriptFact& f : facts.args) {
        out.push_back(f.value);
    }
    return out;
}

} // namespace

TEST_CASE("bash words follow continuations, quotes and escapes, with each word's line", "[adopt]") {
    const BashScript script = split_bash("#!/bin/bash\n"
                                         "echo 'a b' \"c d\" e\\ f \\\n"
                                         "   g # comment\n"
                                         "run x; run y && run z | tee log 2>&1 >out\n");
    REQUIRE(script.commands.size() == 5);
    CHECK(texts(script.commands[0]) == std::vector<std::string>{"echo", "a b", "c d", "e f", "g"});
    CHECK(script.commands[0].words[4].line == 3);
    CHECK(texts(script.commands[4]) == std::vector<std::string>{"tee", "log"});
}

TEST_CASE("bash variables resolve defaults and positional defaults; what needs running is reported", "[adopt]") {
    const BashScript script = split_bash("MODEL=${1:-\"mistralai/Mixtral-8x7B-v0.1\"}\n"
                                         "PORT=${PORT:-8000}\n"
                                         "TP=4\n"
                                         "OUT=\"$(date +%s)\"\n"
                                         "run $MODEL --port=$PORT --tp ${TP} --out $OUT --home $PSCRATCH/x --arg $2\n");
    REQUIRE(script.commands.size() == 1);
    const std::vector<BashWord>& w = script.commands[0].words;
    CHECK(w[1].text == "mistralai/Mixtral-8x7B-v0.1");
    CHECK(w[1].unresolved.empty());
    CHECK(w[2].text == "--port=8000");
    CHECK(w[4].text == "4");
    CHECK(w[6].unresolved == "$(date +%s)");
    CHECK(w[8].unresolved == "$PSCRATCH (set outside the script)");
    CHECK(w[10].unresolved == "$2 (a script argument with no default)");
}

TEST_CASE("bash arrays splice their items; here-documents and exports are read", "[adopt]") {
    const BashScript script = split_bash("args=(\n  --tp 2   # two\n  \"--name\" 'a b'\n)\n"
                                         "args+=(--last)\n"
                                         "export VLLM_X=\"on\"\n"
                                         "cat <<EOF\nvllm serve not/this\nEOF\n"
                                         "run \"${args[@]}\"\n");
    REQUIRE(script.commands.size() == 2);
    CHECK(texts(script.commands[1]) == std::vector<std::string>{"run", "--tp", "2", "--name", "a b", "--last"});
    REQUIRE(script.exports.size() == 1);
    CHECK(script.exports[0].first == "VLLM_X");
    CHECK(script.exports[0].second.text == "on");
}

TEST_CASE("a script inside bash -c is read with the variables it inherits, at its own lines", "[adopt]") {
    const BashScript script = split_bash("TP=4\nsrun shifter bash -c '\n  cd /x\n  torchrun --nproc_per_node $TP train.py\n'\n");
    REQUIRE(script.commands.size() == 3);
    CHECK(texts(script.commands[2]) == std::vector<std::string>{"torchrun", "--nproc_per_node", "4", "train.py"});
    CHECK(script.commands[2].line == 4);
}

TEST_CASE("vllm serve gives parallelism, limits and the options the template does not render", "[adopt]") {
    const ScriptFacts facts = read_script_facts("MODEL=${1:-\"mistralai/Mixtral-8x7B-v0.1\"}\n"
                                                "nsys profile --output=x \\\n"
                                                "  vllm serve $MODEL --host 0.0.0.0 --tensor-parallel-size 1 \\\n"
                                                "    --data-parallel-size 4 --enable-expert-parallel --max-num-seqs 32 \\\n"
                                                "    --enforce-eager --trust-remote-code 2>&1 | tee log\n",
                                                "server.sh");
    CHECK(facts.recognized == std::vector<std::string>{"vllm serve"});
    CHECK(value(facts, "launch.model") == "mistralai/Mixtral-8x7B-v0.1");
    CHECK(fact(facts, "Model-executor.model_plan_parallelization.dp_replicate") == "4 @server.sh:4");
    CHECK(value(facts, "Model-executor.model_plan_parallelization.ep") == "4");
    CHECK(value(facts, "workload.hardware.xpu_spec.total_count") == "4");
    CHECK(value(facts, "workload.data.max-num-seqs") == "32");
    CHECK(value(facts, "workload.model.phase") == "serving");
    CHECK(args(facts) == std::vector<std::string>{"--enforce-eager", "--trust-remote-code"});
}

TEST_CASE("serving clients give the dataset and the load; an unresolved model is reported, not guessed", "[adopt]") {
    const ScriptFacts facts = read_script_facts("MODEL_PATH=\"${MODEL_PATH:-$PSCRATCH/models/Qwen3-4B}\"\n"
                                                "python -m vllm.entrypoints.cli.main bench serve --model \"$MODEL_PATH\" \\\n"
                                                "  --dataset-name random --random-input-len 1024 --num-prompts 200 --request-rate 8\n",
                                                "client.sh");
    CHECK(facts.recognized == std::vector<std::string>{"vllm bench serve"});
    CHECK(value(facts, "workload.data.dataset") == "random");
    CHECK(value(facts, "workload.data.input_len") == "1024");
    CHECK(value(facts, "workload.data.request_rate") == "8");
    CHECK(value(facts, "launch.model").empty());
    REQUIRE(facts.unresolved.size() == 1);
    CHECK(facts.unresolved[0].where == "client.sh:2");
    CHECK(facts.unresolved[0].message.find("$PSCRATCH") != std::string::npos);
}

TEST_CASE("vllm bench latency gives batch, lengths and iterations", "[adopt]") {
    const ScriptFacts facts = read_script_facts(
        "vllm bench latency --model meta-llama/Llama-3.1-8B -tp 4 --batch-size 8 \\\n"
        "  --input-len 1024 --output-len 128 --num-iters 5 --enforce-eager --max-num-seqs 16\n",
        "run.sh");
    CHECK(value(facts, "workload.model.phase") == "inference");
    CHECK(value(facts, "Model-executor.model_plan_parallelization.tp") == "4");
    CHECK(value(facts, "workload.data.batch_size") == "8");
    CHECK(value(facts, "workload.data.output_len") == "128");
    CHECK(value(facts, "launch.steps") == "5");
    // bench latency's template renders no engine limits: they stay the script's words.
    CHECK(value(facts, "workload.data.max-num-seqs").empty());
    CHECK(args(facts) == std::vector<std::string>{"--enforce-eager", "--max-num-seqs", "16"});
}

TEST_CASE("sglang bench_one_batch gives tp, ep and the batch", "[adopt]") {
    const ScriptFacts facts = read_script_facts("python3 -m sglang.bench_one_batch --model-path Qwen/Qwen3-4B --tp 4 --ep 2 "
                                                "--batch-size 8 --input-len 1024 --output-len 128\n",
                                                "run.sh");
    CHECK(value(facts, "Model-executor.framework.name") == "sglang");
    CHECK(value(facts, "Model-executor.model_plan_parallelization.ep") == "2");
    CHECK(value(facts, "workload.data.input_len") == "1024");
}

TEST_CASE("torchrun and #SBATCH lines give the accelerator count; TorchTitan overrides their field", "[adopt]") {
    const ScriptFacts facts = read_script_facts("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=4\n#SBATCH -A m1234\n"
                                                "torchrun --nproc_per_node 4 --nnodes 2 -m torchtitan.train "
                                                "--job.config_file x.toml --training.steps 20\n",
                                                "job.sbatch");
    CHECK(value(facts, "workload.hardware.xpu_spec.count_per_node") == "4");
    CHECK(value(facts, "workload.hardware.xpu_spec.total_count") == "8");
    CHECK(value(facts, "launch.steps") == "20");
    CHECK(value(facts, "launch.account").empty()); // the contributor's, not the adopter's
}

TEST_CASE("a TorchTitan TOML gives the training shape and parallel degrees", "[adopt]") {
    const ScriptFacts facts = read_script_facts("[model]\nname = \"llama3\"\nflavor = \"8B\" # test\n"
                                                "[training]\nlocal_batch_size = 4\nseq_len = 512\nsteps = 10\n"
                                                "dataset = \"c4_test\"  # comment\n"
                                                "[parallelism]\ndata_parallel_shard_degree = 2\ntensor_parallel_degree = 2\n",
                                                "train.toml");
    CHECK(facts.recognized == std::vector<std::string>{"torchtitan toml"});
    CHECK(value(facts, "workload.data.dataset") == "c4_test");
    CHECK(fact(facts, "workload.data.seq_len") == "512 @train.toml:6");
    CHECK(value(facts, "workload.data.batch_size") == "8");
    CHECK(value(facts, "workload.hardware.xpu_spec.total_count") == "4");
}

TEST_CASE("adopt follows the script where the card disagrees and fills what the card leaves out", "[adopt]") {
    test::TempDir dir;
    const auto card = dir.write("card.yaml", "version: 1\nhf_url: https://huggingface.co/Qwen/Qwen3-4B\nworkload:\n"
                                             "  model:\n    phase: inference\n    model_family: qwen3-4b\n"
                                             "  data:\n    batch_size: 8\n"
                                             "Model-executor:\n  framework:\n    name: vLLM\n"
                                             "  model_plan_parallelization:\n    tp: 2\n");
    const auto script = dir.write("server.sh", "vllm serve Qwen/Qwen3-4B --tensor-parallel-size 4 --max-num-seqs 32\n");
    const AdoptResult result = adopt_card(card, {script});
    const YamlDocument out = YamlDocument::parse(result.card_yaml, "out");
    CHECK(scalar_text(find_node(out.root(), "Model-executor.model_plan_parallelization.tp")) == "4");
    CHECK(scalar_text(find_node(out.root(), "workload.data.max-num-seqs")) == "32");
    CHECK_FALSE(find_node(out.root(), "launch.model").IsDefined()); // hf_url already says it
    const auto tp = std::find_if(result.disagreements.begin(), result.disagreements.end(),
                                 [](const Disagreement& d) { return d.field == "Model-executor.model_plan_parallelization.tp"; });
    REQUIRE(tp != result.disagreements.end());
    CHECK(tp->card == "2");
    CHECK(tp->script == "4");
    CHECK(tp->where == script.string() + ":1");
}

TEST_CASE("adopt refuses a script with no known command and a card that is not a card", "[adopt]") {
    test::TempDir dir;
    const auto card = dir.write("card.yaml", "version: 1\nworkload:\n  model:\n    phase: inference\n");
    const auto script = dir.write("notes.sh", "echo hello\nls -l\n");
    CHECK_THROWS_AS(adopt_card(card, {script}), HarnessError);
    const auto list = dir.write("list.yaml", "- a\n- b\n");
    CHECK_THROWS_AS(adopt_card(list, {script}), HarnessError);
    CHECK_THROWS_AS(adopt_card(card, {dir.path() / "missing.sh"}), HarnessError);
}

TEST_CASE("adopt keeps ep at the card's on a dense model, where vLLM ignores --enable-expert-parallel", "[adopt]") {
    test::TempDir dir;
    const auto card = dir.write("card.yaml", "version: 1\nworkload:\n  model:\n    moe: false\n"
                                             "Model-executor:\n  model_plan_parallelization:\n    tp: 4\n    ep: 1\n");
    const auto script = dir.write("run.sh", "vllm serve Qwen/Qwen3-4B --tensor-parallel-size 4 --enable-expert-parallel\n");
    const AdoptResult result = adopt_card(card, {script});
    const YamlDocument out = YamlDocument::parse(result.card_yaml, "out");
    CHECK(scalar_text(find_node(out.root(), "Model-executor.model_plan_parallelization.ep")) == "1");
    CHECK(std::none_of(result.disagreements.begin(), result.disagreements.end(),
                       [](const Disagreement& d) { return d.field == "Model-executor.model_plan_parallelization.ep"; }));
}
