#pragma once
// What a contributor's script ran, in the card's terms: the commands adopt knows (vllm serve and
// its clients, vllm bench latency, SGLang's bench_one_batch / launch_server / bench_serving,
// torchrun and #SBATCH lines, TorchTitan's TOML) turned into card fields and launch.args.
#include <string>
#include <vector>

namespace harness {

/// A card field (dotted path) and the value the script gave it, with where it said so.
struct ScriptFact {
    std::string field;
    std::string value;
    std::string where;  ///< "FILE:LINE"
    std::string option; ///< the script's spelling ("--tensor-parallel-size")
};

/// Something the script said that adopt does not carry: an unresolved word, an option it leaves out.
struct ScriptFinding {
    std::string where;
    std::string message;
};

struct ScriptFacts {
    std::vector<ScriptFact> facts;
    /// Server/engine options the framework's template does not render: launch.args, as written.
    std::vector<ScriptFact> args;
    /// `export`ed variables the framework reads (VLLM_*, NCCL_*, ...): launch.env.
    std::vector<ScriptFact> env;
    std::vector<ScriptFinding> unresolved;
    std::vector<ScriptFinding> notes;
    /// The commands recognized ("vllm serve", "torchtitan toml"); empty: none.
    std::vector<std::string> recognized;
};

/// Reads one script: a TorchTitan TOML by its `.toml` name, else bash. `display_name` prefixes
/// every `where`.
ScriptFacts read_script_facts(const std::string& text, const std::string& display_name);

} // namespace harness
