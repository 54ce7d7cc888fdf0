#include "run/run_directory.hpp"

#include "util/error.hpp"
#include "util/sha256.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

std::string make_run_id(const RenderedRun& run) {
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
    return fmt::format("{}-{}-{}", name, stamp, sha256_hex(material).substr(0, 6));
}

RunDirectory create_run_directory(const fs::path& results_as_given, const RenderedRun& run) {
    // Ranks, srun and sbatch start in other directories: a relative path would name nothing there.
    const fs::path results = absolute_path(results_as_given);
    std::error_code ec;
    fs::create_directories(results, ec);
    if (ec) {
        throw input_error(fmt::format("--results {}: cannot create: {}", results.string(), ec.message()));
    }
    RunDirectory dir;
    dir.id = make_run_id(run);
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
