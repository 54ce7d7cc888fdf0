#include "trace/trace_names.hpp"

#include "util/byte_source.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <simdjson.h>

namespace harness {

namespace {

// The names, and where each comes from:
//  - kineto_trace_<r>.json(.gz), nsys_<r>.nsys-rep / .sqlite, <host>.trace.json.gz, *.xplane.pb:
//    the names the CCL-Bench tools read (shared/ccl-bench-cards, docs/bundle.md).
//  - <worker>.<time_ns>.pt.trace.json[.gz]: torch.profiler.tensorboard_trace_handler
//    (pytorch/pytorch torch/profiler/profiler.py), worker_name defaulting to
//    f"{socket.gethostname()}_{os.getpid()}"; use_gzip adds ".gz". vLLM's GPU workers and
//    Megatron-LM core_v0.15 profile through this handler, so their names take this form too
//    (vLLM writes e.g. "<id>-rank-0.<ns>.pt.trace.json.gz"; the rank in a worker name is not a
//    convention we rely on: the rank comes from the trace's distributedInfo).
//  - <prefix>_batch<b>_input<i>_output<o>_{prefill,decode}.trace.json.gz: SGLang's bench_one_batch
//    (_create_torch_profiler_filename, python/sglang/bench_one_batch.py); no rank in the name (only
//    TP rank 0 profiles), the rank is in distributedInfo. Checked before the XLA form it resembles.
//  - rank<r>_trace.json: TorchTitan's profiling.py (as the harness's collection has read it).
//  - rank-<r>.json(.gz): older Megatron-LM's profiler export (likewise).
constexpr std::string_view k_kineto_prefix = "kineto_trace_";
constexpr std::string_view k_nsys_prefix = "nsys_";
constexpr std::string_view k_handler_suffix = ".pt.trace.json";
constexpr std::string_view k_xla_suffix = ".trace.json";

struct ParsedRank {
    long long value = 0;
    bool canonical = false; ///< no leading zeros
};

/// Decimal digits only; 18 of them keep the value inside a long long.
std::optional<ParsedRank> parse_rank(std::string_view digits) {
    if (digits.empty() || digits.size() > 18 || !all_digits(digits)) {
        return std::nullopt;
    }
    long long value = 0;
    for (const char c : digits) {
        value = value * 10 + (c - '0');
    }
    return ParsedRank{value, digits.size() == 1 || digits.front() != '0'};
}

/// The text between `prefix` and `suffix` when `name` is exactly prefix + middle + suffix.
std::optional<std::string_view> between(std::string_view name, std::string_view prefix, std::string_view suffix) {
    if (name.size() < prefix.size() + suffix.size() || !starts_with(name, prefix) || !ends_with(name, suffix)) {
        return std::nullopt;
    }
    return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}

TraceName per_rank(TraceKind kind, TraceNameForm form, const ParsedRank& rank, bool compressed) {
    TraceName out;
    out.kind = kind;
    out.form = form;
    out.rank = rank.value;
    out.compressed = compressed;
    out.json = kind == TraceKind::kineto;
    out.canonical = form == TraceNameForm::ccl_bench && rank.canonical;
    out.canonical_name = canonical_trace_name(kind, rank.value, compressed);
    return out;
}

TraceName whole_name(TraceKind kind, TraceNameForm form, std::string_view name, bool compressed) {
    TraceName out;
    out.kind = kind;
    out.form = form;
    out.compressed = compressed;
    out.json = kind == TraceKind::kineto || (kind == TraceKind::xla && !ends_with(name, ".xplane.pb"));
    out.canonical = form == TraceNameForm::ccl_bench;
    if (out.canonical) {
        out.canonical_name = std::string(name);
    }
    return out;
}

/// The index one past the '}' closing the object that starts at text[open], or npos when the text
/// ends first. Braces inside strings do not count.
std::size_t object_end(std::string_view text, std::size_t open) {
    int depth = 0;
    JsonStringState strings;
    for (std::size_t i = open; i < text.size(); ++i) {
        const char c = text[i];
        if (strings.consumed(c)) {
            continue;
        }
        if (c == '{') {
            ++depth;
        } else if (c == '}' && --depth == 0) {
            return i + 1;
        }
    }
    return std::string_view::npos;
}

/// <prefix>_batch<digits>_input<digits>_output<digits>_{prefill,decode}.trace.json
bool is_sglang_bench_name(std::string_view base) {
    for (const std::string_view suffix : {std::string_view("_prefill.trace.json"), std::string_view("_decode.trace.json")}) {
        if (!ends_with(base, suffix)) {
            continue;
        }
        std::string_view rest = base.substr(0, base.size() - suffix.size());
        for (const std::string_view field : {std::string_view("_output"), std::string_view("_input"), std::string_view("_batch")}) {
            const std::size_t at = rest.rfind(field);
            if (at == std::string_view::npos || !parse_rank(rest.substr(at + field.size()))) {
                return false;
            }
            rest = rest.substr(0, at);
        }
        return true;
    }
    return false;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

enum class Scan { found, incomplete, malformed };

/// Looks for "distributedInfo": {...} in `text`; `found` gets the object's text.
Scan scan_distributed_info(std::string_view text, std::string_view& found) {
    constexpr std::string_view key = "\"distributedInfo\"";
    for (std::size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
        std::size_t i = at + key.size();
        while (i < text.size() && is_space(text[i])) {
            ++i;
        }
        if (i == text.size()) {
            return Scan::incomplete;
        }
        if (text[i] != ':') {
            continue; // the word as a value, not the key
        }
        ++i;
        while (i < text.size() && is_space(text[i])) {
            ++i;
        }
        if (i == text.size()) {
            return Scan::incomplete;
        }
        if (text[i] != '{') {
            return Scan::malformed;
        }
        const std::size_t end = object_end(text, i);
        if (end == std::string_view::npos) {
            return Scan::incomplete;
        }
        found = text.substr(i, end - i);
        return Scan::found;
    }
    return Scan::incomplete;
}

DistributedInfoRead parse_distributed_info(std::string_view object_text) {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(object_text);
    simdjson::dom::object object;
    if (parser.parse(padded).get_object().get(object) != simdjson::SUCCESS) {
        return {std::nullopt, "its distributedInfo is not a JSON object"};
    }
    simdjson::dom::element rank_value;
    if (object["rank"].get(rank_value) != simdjson::SUCCESS) {
        return {std::nullopt, "its distributedInfo has no rank"};
    }
    const DistributedRank rank = distributed_rank_of(simdjson::minify(rank_value));
    if (!rank.problem.empty()) {
        return {std::nullopt, rank.problem};
    }
    DistributedInfo info;
    info.rank = rank.rank;
    std::int64_t world = -1;
    if (object["world_size"].get_int64().get(world) == simdjson::SUCCESS) {
        info.world_size = world;
    }
    std::string_view backend;
    if (object["backend"].get_string().get(backend) == simdjson::SUCCESS) {
        info.backend = std::string(backend);
    }
    return {info, ""};
}

} // namespace

TraceName classify_trace_name(std::string_view name) {
    if (const auto stem = between(name, "", ".nsys-rep")) {
        if (const auto digits = between(*stem, k_nsys_prefix, "")) {
            if (const auto rank = parse_rank(*digits)) {
                return per_rank(TraceKind::nsys_rep, TraceNameForm::ccl_bench, *rank, false);
            }
        }
        return stem->empty() ? TraceName{} : whole_name(TraceKind::nsys_rep, TraceNameForm::other_nsys, name, false);
    }
    if (const auto digits = between(name, k_nsys_prefix, ".sqlite")) {
        if (const auto rank = parse_rank(*digits)) {
            return per_rank(TraceKind::nsys_sqlite, TraceNameForm::ccl_bench, *rank, false);
        }
        return {};
    }
    if (const auto host = between(name, "", ".xplane.pb"); host && !host->empty()) {
        return whole_name(TraceKind::xla, TraceNameForm::ccl_bench, name, false);
    }
    const bool compressed = ends_with(name, ".gz");
    const std::string_view base = compressed ? name.substr(0, name.size() - 3) : name;
    if (const auto worker = between(base, "", k_handler_suffix)) {
        return worker->empty() ? TraceName{} : whole_name(TraceKind::kineto, TraceNameForm::tensorboard_handler, name, compressed);
    }
    if (is_sglang_bench_name(base)) {
        return whole_name(TraceKind::kineto, TraceNameForm::sglang_bench, name, compressed);
    }
    if (const auto host = between(base, "", k_xla_suffix)) {
        return host->empty() ? TraceName{} : whole_name(TraceKind::xla, TraceNameForm::ccl_bench, name, compressed);
    }
    struct RankForm {
        std::string_view prefix;
        std::string_view suffix;
        TraceNameForm form;
    };
    static constexpr RankForm k_forms[] = {
        {k_kineto_prefix, ".json", TraceNameForm::ccl_bench},
        {"rank-", ".json", TraceNameForm::megatron},
        {"rank", "_trace.json", TraceNameForm::torchtitan},
    };
    for (const RankForm& form : k_forms) {
        if (const auto digits = between(base, form.prefix, form.suffix)) {
            if (const auto rank = parse_rank(*digits)) {
                return per_rank(TraceKind::kineto, form.form, *rank, compressed);
            }
            return {};
        }
    }
    return {};
}

std::string canonical_trace_name(TraceKind kind, long long rank, bool compressed) {
    switch (kind) {
    case TraceKind::kineto: return fmt::format("kineto_trace_{}.json{}", rank, compressed ? ".gz" : "");
    case TraceKind::nsys_rep: return fmt::format("nsys_{}.nsys-rep", rank);
    case TraceKind::nsys_sqlite: return fmt::format("nsys_{}.sqlite", rank);
    case TraceKind::xla:
    case TraceKind::not_a_trace: break;
    }
    return {};
}

std::string expected_trace_names() {
    return "kineto_trace_<rank>.json(.gz), nsys_<rank>.nsys-rep, <host>.trace.json.gz or *.xplane.pb";
}

std::string describe_trace_name_form(TraceNameForm form) {
    switch (form) {
    case TraceNameForm::torchtitan: return "TorchTitan's rank<r>_trace.json";
    case TraceNameForm::megatron: return "Megatron-LM's rank-<r>.json";
    case TraceNameForm::tensorboard_handler: return "torch's tensorboard handler's <worker>.<time_ns>.pt.trace.json";
    case TraceNameForm::sglang_bench: return "SGLang bench_one_batch's <prefix>_batch<b>_input<i>_output<o>_<stage>.trace.json";
    case TraceNameForm::other_nsys: return "an nsys report not named nsys_<rank>.nsys-rep";
    case TraceNameForm::ccl_bench:
    case TraceNameForm::none: break;
    }
    return {};
}

bool is_trace_file_name(std::string_view file_name) {
    const TraceName name = classify_trace_name(file_name);
    return name.canonical && name.json;
}

long long kineto_trace_rank(std::string_view file_name) {
    const TraceName name = classify_trace_name(file_name);
    return name.canonical && name.kind == TraceKind::kineto ? name.rank.value_or(-1) : -1;
}

std::string misplaced_trace_problem(std::string_view relative) {
    const fs::path path{std::string(relative)};
    const std::string file_name = path.filename().string();
    const TraceName name = classify_trace_name(file_name);
    const bool top = !path.has_parent_path();
    if (!top && name.canonical) {
        return fmt::format("a trace inside a folder; the CCL-Bench tools read {} at the bundle's top level", file_name);
    }
    if (name.form == TraceNameForm::tensorboard_handler || name.form == TraceNameForm::sglang_bench) {
        return fmt::format("a trace under {} name; expected kineto_trace_<rank>.json{} (collection names it by the rank "
                           "in its distributedInfo)",
                           describe_trace_name_form(name.form), name.compressed ? ".gz" : "");
    }
    if (name.kind == TraceKind::kineto && !name.canonical && !name.canonical_name.empty()) {
        return fmt::format("a trace under a name the CCL-Bench tools do not read; expected {}", name.canonical_name);
    }
    // Not one of our names, but plainly meant as a trace: say which names are.
    if (top && name.kind == TraceKind::not_a_trace && to_lower(file_name).find("trace") != std::string::npos &&
        (ends_with(file_name, ".json") || ends_with(file_name, ".json.gz"))) {
        return fmt::format("a trace under a name the CCL-Bench tools do not read; expected {}", expected_trace_names());
    }
    return {};
}

DistributedRank distributed_rank_of(std::string_view json_value) {
    double value = 0;
    const bool number = !json_value.empty() && (json_value.front() == '-' || (json_value.front() >= '0' && json_value.front() <= '9'));
    const auto [end, ec] = number ? std::from_chars(json_value.data(), json_value.data() + json_value.size(), value)
                                  : std::from_chars_result{json_value.data(), std::errc::invalid_argument};
    // 1e308 or 2.5 must not reach a cast to long long (fuzz_trace found the first).
    if (ec == std::errc() && end == json_value.data() + json_value.size() && value >= 0 &&
        value <= static_cast<double>(k_max_distributed_rank) && value == std::floor(value)) {
        return {static_cast<long long>(value), ""};
    }
    constexpr std::size_t k_shown = 40;
    const std::string shown = json_value.size() > k_shown ? std::string(json_value.substr(0, k_shown)) + "..."
                                                          : std::string(json_value);
    return {-1, fmt::format("its distributedInfo.rank is {}, which names no rank (a whole number from 0 to {})", terminal_text(shown),
                            k_max_distributed_rank)};
}

DistributedInfoRead read_distributed_info_checked(const fs::path& trace, std::size_t window) {
    constexpr std::size_t k_piece = std::size_t{64} << 10;
    std::string text;
    try {
        const std::unique_ptr<ByteSource> source = ByteSource::open(trace);
        while (text.size() < window) {
            const std::size_t old_size = text.size();
            text.resize(old_size + std::min(k_piece, window - old_size));
            const std::size_t got = source->read(text.data() + old_size, text.size() - old_size);
            text.resize(old_size + got);
            std::string_view object;
            const Scan scan = scan_distributed_info(text, object);
            if (scan == Scan::found) {
                return parse_distributed_info(object);
            }
            if (scan == Scan::malformed) {
                return {std::nullopt, "its distributedInfo is not a JSON object"};
            }
            if (got == 0) {
                return {};
            }
        }
    } catch (const HarnessError&) {
        return {}; // unreadable or damaged: the rank is unknown, and verify says why
    }
    return {};
}

std::optional<DistributedInfo> read_distributed_info(const fs::path& trace, std::size_t window) {
    return read_distributed_info_checked(trace, window).info;
}

} // namespace harness
