#include "sweep.hpp"

#include "card.hpp"
#include "cluster.hpp"
#include "home.hpp"
#include "plan.hpp"
#include "run.hpp"
#include "run_record.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"

#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <set>
#include <streambuf>
#include <unistd.h>

namespace harness {

SweepAxis parse_vary(const std::string& text) {
    const auto equals = text.find('=');
    if (equals == std::string::npos) {
        throw input_error(fmt::format("--vary {}: expected PATH=V1,V2,...", enquote(text)));
    }
    SweepAxis axis;
    axis.path = trim(text.substr(0, equals));
    if (axis.path.empty()) {
        throw input_error(fmt::format("--vary {}: the field path before '=' is empty", enquote(text)));
    }
    for (const auto& value : split(text.substr(equals + 1), ',')) {
        if (trim(value).empty()) {
            throw input_error(fmt::format("--vary {}: empty value in the list (values are separated by ',')", enquote(text)));
        }
        axis.values.push_back(value);
    }
    if (axis.values.empty()) {
        throw input_error(fmt::format("--vary {}: no values after '='", enquote(text)));
    }
    return axis;
}

std::vector<std::vector<std::string>> expand_matrix(const std::vector<SweepAxis>& axes, bool zip) {
    if (axes.empty()) {
        throw input_error("sweep: nothing to vary: give at least one --vary PATH=V1,V2,...");
    }
    std::set<std::string> paths;
    for (const auto& axis : axes) {
        if (axis.values.empty()) {
            throw input_error(fmt::format("--vary {}: no values", axis.path));
        }
        if (!paths.insert(axis.path).second) {
            throw input_error(fmt::format("--vary {}: the field is varied twice", axis.path));
        }
    }
    std::vector<std::vector<std::string>> points;
    if (zip) {
        for (const auto& axis : axes) {
            if (axis.values.size() != axes.front().values.size()) {
                throw input_error(fmt::format("--zip: --vary {} has {} values but --vary {} has {}; zipped lists must be equally long",
                                              axis.path, axis.values.size(), axes.front().path, axes.front().values.size()));
            }
        }
        for (std::size_t i = 0; i < axes.front().values.size(); ++i) {
            std::vector<std::string> point;
            for (const auto& axis : axes) {
                point.push_back(axis.path + "=" + axis.values[i]);
            }
            points.push_back(std::move(point));
        }
        return points;
    }
    points.emplace_back();
    for (const auto& axis : axes) {
        std::vector<std::vector<std::string>> next;
        for (const auto& prefix : points) {
            for (const auto& value : axis.values) {
                next.push_back(prefix);
                next.back().push_back(axis.path + "=" + value);
            }
        }
        points = std::move(next);
    }
    return points;
}

std::string to_string(PointState state) {
    switch (state) {
    case PointState::pending: return "pending";
    case PointState::skipped: return "skipped";
    case PointState::running: return "running";
    case PointState::completed: return "completed";
    case PointState::failed: return "failed";
    case PointState::cancelled: return "cancelled";
    }
    return "unknown";
}

namespace {

PointState point_state_from(const std::string& name, const std::string& file) {
    for (const PointState state : {PointState::pending, PointState::skipped, PointState::running, PointState::completed,
                                   PointState::failed, PointState::cancelled}) {
        if (to_string(state) == name) {
            return state;
        }
    }
    throw input_error(fmt::format("{}: points[].state: unknown state {}", file, enquote(name)));
}

std::vector<std::string> strings_of(const Json* array, const std::string& file, const std::string& field) {
    if (array == nullptr || !array->is_array()) {
        throw input_error(fmt::format("{}: {}: expected an array of strings", file, field));
    }
    std::vector<std::string> values;
    for (const auto& item : array->as_array()) {
        if (!item.is_string()) {
            throw input_error(fmt::format("{}: {}: expected an array of strings", file, field));
        }
        values.push_back(item.as_string());
    }
    return values;
}

} // namespace

Json SweepRecord::to_json() const {
    Json json = Json::object();
    json["format"] = 1;
    json["id"] = id;
    json["card"] = card;
    json["card_sha256"] = card_sha256;
    json["cluster"] = cluster;
    json["zip"] = zip;
    json["created"] = created;
    json["axes"] = Json::array();
    for (const auto& axis : axes) {
        json["axes"].push_back(Json(Json::Object{{"path", axis.path}, {"values", json_string_array(axis.values)}}));
    }
    json["points"] = Json::array();
    for (const auto& point : points) {
        Json entry = Json::object();
        entry["overrides"] = json_string_array(point.overrides);
        entry["state"] = to_string(point.state);
        entry["reason"] = point.reason;
        entry["run_dir"] = point.run_dir;
        entry["bundle"] = point.bundle;
        entry["exit_code"] = point.exit_code ? Json(*point.exit_code) : Json();
        json["points"].push_back(entry);
    }
    return json;
}

SweepRecord SweepRecord::from_json(const Json& json, const std::string& file) {
    if (!json.is_object()) {
        throw input_error(fmt::format("{}: expected a JSON object", file));
    }
    SweepRecord record;
    record.id = json.string_or("id");
    record.card = json.string_or("card");
    record.card_sha256 = json.string_or("card_sha256");
    record.cluster = json.string_or("cluster");
    record.created = json.string_or("created");
    if (record.id.empty() || record.card.empty()) {
        throw input_error(fmt::format("{}: id, card: missing; not a sweep record", file));
    }
    const Json* zip = json.find("zip");
    record.zip = zip != nullptr && zip->is_bool() && zip->as_bool();
    const Json* axes = json.find("axes");
    if (axes != nullptr && axes->is_array()) {
        for (const auto& axis : axes->as_array()) {
            record.axes.push_back({axis.string_or("path"), strings_of(axis.find("values"), file, "axes[].values")});
        }
    }
    const Json* points = json.find("points");
    if (points == nullptr || !points->is_array()) {
        throw input_error(fmt::format("{}: points: expected an array", file));
    }
    for (const auto& entry : points->as_array()) {
        if (!entry.is_object()) {
            throw input_error(fmt::format("{}: points[]: expected objects", file));
        }
        SweepPoint point;
        point.overrides = strings_of(entry.find("overrides"), file, "points[].overrides");
        point.state = point_state_from(entry.string_or("state"), file);
        point.reason = entry.string_or("reason");
        point.run_dir = entry.string_or("run_dir");
        point.bundle = entry.string_or("bundle");
        const Json* code = entry.find("exit_code");
        if (code != nullptr && code->is_int()) {
            point.exit_code = static_cast<int>(code->as_int());
        }
        record.points.push_back(std::move(point));
    }
    return record;
}

void SweepRecord::save(const fs::path& sweep_dir) const { write_file_atomic(sweep_dir / k_sweep_file, to_json().dump()); }

SweepRecord SweepRecord::load(const fs::path& sweep_dir) {
    const fs::path file = sweep_dir / k_sweep_file;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        throw input_error(fmt::format("{}: not a sweep directory (no {})", sweep_dir.string(), k_sweep_file));
    }
    Json json;
    try {
        json = Json::parse(read_file(file));
    } catch (const std::runtime_error& error) {
        throw input_error(fmt::format("{}: {}", file.string(), error.what()));
    }
    return from_json(json, file.string());
}

namespace {

/// Copies what run_workload prints to the terminal and keeps it, so the sweep can read back
/// the run directory and bundle it announced.
class TeeBuffer : public std::streambuf {
public:
    explicit TeeBuffer(std::streambuf* terminal) : m_terminal(terminal) {}
    const std::string& text() const { return m_text; }

protected:
    int_type overflow(int_type c) override {
        if (traits_type::eq_int_type(c, traits_type::eof())) {
            return traits_type::not_eof(c);
        }
        const char ch = traits_type::to_char_type(c);
        m_text += ch;
        return m_terminal->sputc(ch);
    }
    std::streamsize xsputn(const char* data, std::streamsize count) override {
        m_text.append(data, static_cast<std::size_t>(count));
        return m_terminal->sputn(data, count);
    }
    int sync() override { return m_terminal->pubsync(); }

private:
    std::streambuf* m_terminal;
    std::string m_text;
};

/// From run_workload's output: `run <id>: <card> on <target> -> <dir>` and `  bundle: <path> (...)`.
void read_run_output(const std::string& text, SweepPoint& point) {
    for (const auto& line : split(text, '\n')) {
        const auto arrow = line.find(" -> ");
        if (point.run_dir.empty() && starts_with(line, "run ") && arrow != std::string::npos) {
            point.run_dir = line.substr(arrow + 4);
        } else if (starts_with(line, "  bundle: ")) {
            const std::string rest = line.substr(10);
            point.bundle = rest.substr(0, rest.find(" ("));
        } else if (starts_with(line, "run ") && arrow == std::string::npos) {
            // The final line, `run <id> <state>: <reason>`, says why it did not complete.
            const auto colon = line.find(": ");
            if (colon != std::string::npos) {
                point.reason = line.substr(colon + 2);
            }
        }
    }
}

std::string utc_stamp() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &parts);
    return stamp;
}

std::string point_label(const SweepPoint& point) { return point.overrides.empty() ? "(card as is)" : join(point.overrides, " "); }

/// `validate --strict` for one point: the reason it cannot run, or empty.
std::string check_point(const fs::path& card_path, const std::string& cluster_name, const std::vector<std::string>& overrides) {
    try {
        const WorkloadCard card = WorkloadCard::load(card_path, overrides);
        Diagnostics diagnostics = card.diagnostics();
        if (!diagnostics.has_errors()) {
            const std::string target = cluster_name.empty() ? infer_target(card) : cluster_name;
            const ClusterProfile cluster = ClusterProfile::load(harness_home() / "clusters", target);
            make_plan(card, cluster, true, diagnostics);
        }
        std::vector<std::string> errors;
        for (const auto& item : diagnostics.items()) {
            if (item.severity == Severity::error) {
                errors.push_back(item.text());
            }
        }
        return join(errors, "; ");
    } catch (const HarnessError& error) {
        return error.what();
    }
}

fs::path new_sweep_dir(const fs::path& results, const std::string& card_name) {
    std::error_code ec;
    fs::create_directories(results, ec);
    if (ec) {
        throw input_error(fmt::format("--results {}: cannot create: {}", results.string(), ec.message()));
    }
    const std::string material = std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) +
                                 std::to_string(::getpid()) + card_name;
    const fs::path dir = results / fmt::format("sweep-{}-{}-{}", card_name, utc_stamp(), sha256_hex(material).substr(0, 6));
    if (!fs::create_directory(dir, ec) || ec) {
        throw HarnessError(fmt::format("{}: cannot create the sweep directory{}", dir.string(), ec ? ": " + ec.message() : ""));
    }
    return dir;
}

int run_points(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out) {
    std::size_t runnable = 0;
    for (const auto& point : record.points) {
        runnable += point.state == PointState::pending ? 1U : 0U;
    }
    std::size_t index = 0;
    for (auto& point : record.points) {
        if (point.state != PointState::pending) {
            continue;
        }
        if (interrupt_signal() != 0) {
            break;
        }
        ++index;
        out << fmt::format("sweep {}: point {}/{}: {}\n", record.id, index, runnable, point_label(point));
        point = SweepPoint{point.overrides, PointState::running, "", "", "", std::nullopt};
        record.save(dir);

        RunOptions run;
        run.card = record.card;
        run.cluster = record.cluster;
        run.overrides = point.overrides;
        run.results = dir;
        run.grace_seconds = options.grace_seconds;
        run.git_cache = options.git_cache;
        TeeBuffer tee(out.rdbuf());
        std::ostream run_out(&tee);
        int code = k_exit_failure;
        try {
            code = run_workload(run, run_out);
        } catch (const HarnessError& error) {
            // One point's failure, whatever it is, never stops the others.
            code = error.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
            point.reason = error.what();
            out << fmt::format("ccl-harness: error: {}\n", error.what());
        }
        read_run_output(tee.text(), point);
        point.exit_code = code;
        if (code == k_exit_ok) {
            point.state = PointState::completed;
        } else if (code == k_exit_interrupted || interrupt_signal() != 0) {
            point.state = PointState::cancelled;
        } else {
            point.state = PointState::failed;
            if (point.reason.empty()) {
                point.reason = fmt::format("exit {}", code);
            }
        }
        record.save(dir);
        if (point.state == PointState::cancelled) {
            break;
        }
    }

    std::size_t counts[6] = {};
    for (const auto& point : record.points) {
        ++counts[static_cast<int>(point.state)];
    }
    out << fmt::format("sweep {}: {} completed, {} failed, {} skipped, {} cancelled, {} not run\n  sweep directory: {}\n", record.id,
                       counts[static_cast<int>(PointState::completed)], counts[static_cast<int>(PointState::failed)],
                       counts[static_cast<int>(PointState::skipped)], counts[static_cast<int>(PointState::cancelled)],
                       counts[static_cast<int>(PointState::pending)], dir.string());
    if (interrupt_signal() != 0) {
        out << fmt::format("  interrupted; finish it with: ccl-harness sweep --resume {}\n", dir.string());
        return k_exit_interrupted;
    }
    return counts[static_cast<int>(PointState::failed)] > 0 ? k_exit_failure : k_exit_ok;
}

int resume_sweep(const SweepOptions& options, std::ostream& out) {
    SweepRecord record = SweepRecord::load(options.resume);
    std::error_code ec;
    if (!fs::is_regular_file(record.card, ec)) {
        throw input_error(fmt::format("{}: card {} is gone", (options.resume / k_sweep_file).string(), record.card));
    }
    if (!record.card_sha256.empty() && sha256_hex(read_file(record.card)) != record.card_sha256) {
        throw input_error(fmt::format("{}: the card changed since the sweep began; start a new sweep", record.card));
    }
    std::size_t again = 0;
    for (auto& point : record.points) {
        if (point.state != PointState::completed && point.state != PointState::skipped) {
            // The earlier attempt's run directory stays where it is, for the record.
            point.state = PointState::pending;
            ++again;
        }
    }
    out << fmt::format("sweep {}: resuming {} point(s)\n", record.id, again);
    if (options.dry_run) {
        return k_exit_ok;
    }
    return run_points(record, fs::absolute(options.resume).lexically_normal(), options, out);
}

} // namespace

int run_sweep(const SweepOptions& options, std::ostream& out) {
    out << std::unitbuf;
    // Before the first run: a Ctrl-C between points must be recorded too, not kill the sweep.
    install_interrupt_handlers();
    if (!options.resume.empty()) {
        if (!options.card.empty() || !options.vary.empty()) {
            throw input_error("sweep --resume DIR takes no card or --vary: the sweep directory has them");
        }
        return resume_sweep(options, out);
    }
    if (options.card.empty()) {
        throw input_error("sweep: give a card and --vary PATH=V1,V2,... (or --resume SWEEP_DIR)");
    }
    std::vector<SweepAxis> axes;
    for (const auto& text : options.vary) {
        axes.push_back(parse_vary(text));
    }
    const auto matrix = expand_matrix(axes, options.zip);
    // The card itself must be readable; what the overrides do to it is each point's business.
    const WorkloadCard base = WorkloadCard::load(options.card);

    SweepRecord record;
    record.card = fs::absolute(options.card).lexically_normal().string();
    record.card_sha256 = sha256_hex(read_file(options.card));
    record.cluster = options.cluster;
    record.zip = options.zip;
    record.axes = axes;
    record.created = utc_now();
    std::size_t runnable = 0;
    for (const auto& overrides : matrix) {
        SweepPoint point;
        point.overrides = overrides;
        point.reason = check_point(options.card, options.cluster, overrides);
        point.state = point.reason.empty() ? PointState::pending : PointState::skipped;
        runnable += point.reason.empty() ? 1U : 0U;
        out << fmt::format("  {} {}{}\n", point.reason.empty() ? "run " : "skip", point_label(point),
                           point.reason.empty() ? "" : ": " + point.reason);
        record.points.push_back(std::move(point));
    }
    out << fmt::format("sweep of {}: {} point(s), {} to run, {} skipped by validate --strict\n", base.name(), matrix.size(), runnable,
                       matrix.size() - runnable);
    if (runnable == 0) {
        throw input_error("sweep: no point passes validate --strict; nothing to run");
    }
    if (options.dry_run) {
        return k_exit_ok;
    }
    const fs::path dir = fs::absolute(new_sweep_dir(options.results, base.name())).lexically_normal();
    record.id = dir.filename().string();
    record.save(dir);
    return run_points(record, dir, options, out);
}

} // namespace harness
