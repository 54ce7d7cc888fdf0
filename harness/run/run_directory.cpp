#include "run/run_directory.hpp"

#include "util/error.hpp"
#include "util/safe_name.hpp"
#include "util/sha256.hpp"

#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

namespace {

// The short forms people already write in CCL-Bench run names; any other field keeps its name.
constexpr std::array<std::pair<const char*, const char*>, 8> k_short_keys{{
    {"batch_size", "bs"},
    {"micro_batch_size", "mbs"},
    {"global_batch_size", "gbs"},
    {"seq_len", "seq"},
    {"input_len", "in"},
    {"output_len", "out"},
    {"max-num-batched-tokens", "mnbt"},
    {"total_count", "xpus"},
}};

// [A-Za-z0-9._] kept, every other run of bytes one '_', no '_' or '.' at either end: a piece
// never starts a hidden file or reads as a separator.
std::string label_piece_text(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const bool kept = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_';
        if (kept) {
            out += c;
        } else if (out.empty() || out.back() != '_') {
            out += '_';
        }
    }
    const std::size_t first = out.find_first_not_of("._");
    if (first == std::string::npos) {
        return "";
    }
    return out.substr(first, out.find_last_not_of("._") - first + 1);
}

} // namespace

std::string run_id_label(const std::vector<std::string>& overrides) {
    std::string label;
    for (const std::string& override_text : overrides) {
        const std::size_t equals = override_text.find('=');
        const std::string path = override_text.substr(0, equals);
        const std::string value = equals == std::string::npos ? "" : override_text.substr(equals + 1);
        std::string key = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
        for (const auto& [name, short_name] : k_short_keys) {
            if (key == name) {
                key = short_name;
            }
        }
        key = label_piece_text(key);
        const std::string shown = label_piece_text(value);
        const bool numeric = !shown.empty() && std::isdigit(static_cast<unsigned char>(shown.front())) != 0;
        std::string piece = key.empty() || shown.empty() ? key + shown : key + (numeric ? "" : "_") + shown;
        piece = label_piece_text(piece.substr(0, k_max_run_label_piece_bytes));
        if (piece.empty()) {
            continue;
        }
        if (label.size() + 1 + piece.size() > k_max_run_label_bytes) {
            break;
        }
        label += (label.empty() ? "" : "-") + piece;
    }
    return label;
}

std::string make_run_id(const RenderedRun& run, const std::string& label) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &parts);
    std::string material = std::to_string(now.time_since_epoch().count()) + std::to_string(::getpid());
    for (const auto& file : run.files) {
        material += file.name + '\0' + file.content;
    }
    std::string name;
    for (const char c : run.plan.card_name) {
        name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
    }
    const std::string hash = sha256_hex(material).substr(0, 6);
    if (!label.empty()) {
        std::string labelled = fmt::format("{}-{}-{}-{}", name, label, stamp, hash);
        if (file_name_problem(labelled).empty()) {
            return labelled;
        }
    }
    return fmt::format("{}-{}-{}", name, stamp, hash);
}

void refuse_linked_entries(const fs::path& run_dir) {
    const auto refuse_link = [&](const fs::path& entry, const std::string& shown) {
        std::error_code ec;
        const fs::file_status status = fs::symlink_status(entry, ec);
        if (fs::is_symlink(status)) {
            throw input_error(fmt::format("{}: {} is a symbolic link; a run directory's {} must be its own", run_dir.string(), shown,
                                          shown.back() == '/' ? "folders" : "files"));
        }
        return fs::is_directory(status);
    };
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool folder = entry.is_directory(ec) || (entry.is_symlink(ec) && fs::is_directory(entry.path(), ec));
        refuse_link(entry.path(), folder ? name + "/" : name);
    }
    if (ec) {
        throw input_error(fmt::format("{}: cannot list: {}", run_dir.string(), ec.message()));
    }
    for (const char* folder : {run_files::k_logs, run_files::k_traces, "probe"}) {
        refuse_link(run_dir / run_files::k_rendered / folder, fmt::format("{}/{}/", run_files::k_rendered, folder));
    }
}

RunDirectory create_run_directory(const fs::path& results_as_given, const RenderedRun& run, const std::string& label) {
    // Ranks, srun and sbatch start in other directories: a relative path would name nothing there.
    const fs::path results = absolute_path(results_as_given);
    std::error_code ec;
    fs::create_directories(results, ec);
    if (ec) {
        throw input_error(fmt::format("--results {}: cannot create: {}", results.string(), ec.message()));
    }
    RunDirectory dir;
    dir.id = make_run_id(run, label);
    dir.path = results / dir.id;
    if (::mkdir(dir.path.c_str(), 0755) != 0) {
        throw HarnessError(fmt::format("{}: cannot create run directory: {}", dir.path.string(), std::strerror(errno)));
    }
    fs::create_directories(dir.rendered() / "logs");
    fs::create_directories(dir.logs());
    fs::create_directories(dir.traces());
    for (const auto& file : run.files) {
        write_file_atomic(dir.rendered() / file.name, file.content, file.executable);
    }
    // The top level keeps the two files people open first.
    write_file_atomic(dir.path / "card.yaml", run.find("card.yaml")->content);
    write_file_atomic(dir.path / "plan.json", run.find("plan.json")->content);
    return dir;
}

} // namespace harness
