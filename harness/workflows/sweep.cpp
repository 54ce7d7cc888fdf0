#include "workflows/sweep.hpp"

#include "run/run_directory.hpp"

#include "card/card.hpp"
#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "plan/resolve.hpp"
#include "run/run_record.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "workflows/run_workload.hpp"
#include "workflows/sweep_array.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <limits>
#include <set>
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

std::uint64_t count_points(const std::vector<SweepAxis>& axes, bool zip) {
    if (axes.empty()) {
        return 0;
    }
    if (zip) {
        return axes.front().values.size();
    }
    std::uint64_t count = 1;
    for (const auto& axis : axes) {
        const std::uint64_t size = axis.values.size();
        // Saturates instead of wrapping: a count past any limit is all the caller needs to know.
        if (size != 0 && count > std::numeric_limits<std::uint64_t>::max() / size) {
            return std::numeric_limits<std::uint64_t>::max();
        }
        count *= size;
    }
    return count;
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
        json["points"].push_back(sweep_point_to_json(point));
    }
    return json;
}

Json sweep_point_to_json(const SweepPoint& point) {
    Json entry = Json::object();
    entry["overrides"] = json_string_array(point.overrides);
    entry["state"] = to_string(point.state);
    entry["reason"] = point.reason;
    entry["run_dir"] = point.run_dir;
    entry["bundle"] = point.bundle;
    entry["exit_code"] = point.exit_code ? Json(*point.exit_code) : Json();
    entry["job_id"] = point.job_id;
    entry["slurm_state"] = point.slurm_state;
    entry["reused"] = point.reused;
    return entry;
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
    record.zip = json.bool_or("zip");
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
        point.job_id = entry.string_or("job_id");
        point.slurm_state = entry.string_or("slurm_state");
        point.reused = entry.bool_or("reused");
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

std::string utc_stamp() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &parts);
    return stamp;
}

/// A value the field cannot hold (batch_size=abc) is a usage error before anything runs: skipping
/// is for points that parse but do not fit the machine, and a silently missing point of a sweep
/// (or a Slurm array) is a result nobody asked for.
void check_axis_values(const fs::path& card_path, const std::vector<SweepAxis>& axes) {
    for (const SweepAxis& axis : axes) {
        for (const std::string& value : axis.values) {
            const std::string assignment = axis.path + "=" + value;
            const WorkloadCard card = WorkloadCard::load(card_path, {assignment});
            for (const Diagnostic& item : card.diagnostics().items()) {
                if (item.severity == Severity::error && starts_with(item.location, "--set ")) {
                    throw input_error(fmt::format("--vary {}: {}", assignment, item.message));
                }
            }
        }
    }
}

/// `validate --strict` for one point: the reason it cannot run, or empty.
std::string check_point(const fs::path& card_path, const std::string& cluster_name, const std::vector<std::string>& overrides,
                        const fs::path& home) {
    try {
        const Resolved resolved = resolve({card_path, overrides, cluster_name, true, home});
        std::vector<std::string> errors;
        for (const auto& item : resolved.diagnostics.items()) {
            if (item.severity == Severity::error) {
                errors.push_back(item.text());
            }
        }
        return join(errors, "; ");
    } catch (const HarnessError& error) {
        return error.what();
    }
}

/// What a point's Slurm job can charge, for a dry run: the same bill `run --dry-run` shows;
/// empty for a point that does not run or runs elsewhere than Slurm.
std::optional<SlurmBill> point_bill(const fs::path& card_path, const std::string& cluster_name, const SweepPoint& point,
                                    const fs::path& home) {
    if (point.state != PointState::pending) {
        return std::nullopt;
    }
    try {
        const Resolved resolved = resolve({card_path, point.overrides, cluster_name, true, home});
        if (!resolved.ok() || resolved.profile->scheduler != Scheduler::slurm) {
            return std::nullopt;
        }
        return slurm_bill(*resolved.plan, *resolved.profile);
    } catch (const HarnessError&) {
        return std::nullopt; // the point's own check said why already
    }
}

/// Every point's bill and the sums over those that have one.
void bill_points(SweepOutcome& outcome, const SweepOptions& options) {
    bool allocation_known = true;
    double allocation = 0;
    for (const auto& point : outcome.points) {
        std::optional<SlurmBill> bill = point_bill(options.card, options.cluster, point, options.home);
        if (bill) {
            outcome.total_node_hours += bill->node_hours;
            allocation_known = allocation_known && bill->allocation_hours.has_value();
            allocation += bill->allocation_hours.value_or(0);
        }
        outcome.bills.push_back(std::move(bill));
    }
    if (allocation_known) {
        outcome.total_allocation_hours = allocation;
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
    fs::path dir = results / fmt::format("sweep-{}-{}-{}", card_name, utc_stamp(), sha256_hex(material).substr(0, 6));
    if (!fs::create_directory(dir, ec) || ec) {
        throw HarnessError(fmt::format("{}: cannot create the sweep directory{}", dir.string(), ec ? ": " + ec.message() : ""));
    }
    return dir;
}

SweepOutcome outcome_of(const SweepRecord& record, const fs::path& dir) {
    SweepOutcome outcome;
    outcome.id = record.id;
    outcome.sweep_dir = dir;
    outcome.card = record.card;
    outcome.points = record.points;
    return outcome;
}

} // namespace

RunOptions point_run_options(const SweepRecord& record, const fs::path& dir, const SweepOptions& options, const SweepPoint& point) {
    RunOptions run;
    run.card = record.card;
    run.cluster = record.cluster;
    run.overrides = point.overrides;
    run.run_label = run_id_label(point.overrides);
    run.results = dir;
    run.grace_seconds = options.grace_seconds;
    run.secret_names = options.secret_names;
    run.git_cache = options.git_cache;
    run.home = options.home;
    run.reuse = options.reuse;
    return run;
}

void settle_point(SweepPoint& point, const RunOutcome& ran, const std::string& error, std::ostream& out) {
    const int code = ran.exit_code;
    if (!error.empty()) {
        point.reason = error;
        out << fmt::format("ccl-harness: error: {}\n", error);
    } else {
        point.run_dir = ran.run_dir.string();
        point.bundle = ran.bundle ? ran.bundle->path.string() : "";
        point.reason = ran.reason;
        point.reused = ran.reused;
        if (!ran.pack_error.empty()) {
            point.reason = "packing failed: " + ran.pack_error;
            out << fmt::format("ccl-harness: error: {}\n", terminal_text(point.reason, true));
        }
    }
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
}

// Overrides come from sweep.json on --resume: a directory handed over may hold any text, and
// each label is printed; escaped one line each.
std::string point_label(const SweepPoint& point) {
    return point.overrides.empty() ? "(card as is)" : terminal_text(join(point.overrides, " "));
}

namespace {

/// Runs the pending points one after another, saving sweep.json after every change.
void run_points_in_turn(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out) {
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
        point = SweepPoint{point.overrides, PointState::running, "", "", "", std::nullopt, "", "", false};
        record.save(dir);

        RunOutcome ran;
        std::string error;
        try {
            ran = run_workload(point_run_options(record, dir, options, point), out);
            out << format_run_outcome(ran);
        } catch (const HarnessError& caught) {
            // One point's failure, whatever it is, never stops the others.
            ran.exit_code = caught.code() == k_exit_interrupted ? k_exit_interrupted : k_exit_failure;
            error = caught.what();
        }
        settle_point(point, ran, error, out);
        record.save(dir);
        if (point.state == PointState::cancelled) {
            break;
        }
    }
}

/// Runs the pending points (a Slurm target: as job arrays), then sums them up.
SweepOutcome run_points(SweepRecord& record, const fs::path& dir, const SweepOptions& options, std::ostream& out) {
    if (sweep_targets_slurm(record, options.home)) {
        run_points_as_arrays(record, dir, options, out);
    } else {
        run_points_in_turn(record, dir, options, out);
    }
    SweepOutcome outcome = outcome_of(record, dir);
    outcome.interrupted = interrupt_signal() != 0;
    bool failed = false;
    for (const auto& point : record.points) {
        failed = failed || point.state == PointState::failed;
    }
    outcome.exit_code = outcome.interrupted ? k_exit_interrupted : failed ? k_exit_failure : k_exit_ok;
    return outcome;
}

SweepOutcome resume_sweep(const SweepOptions& options, std::ostream& out) {
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
    const fs::path dir = absolute_path(options.resume);
    if (options.dry_run) {
        SweepOutcome outcome = outcome_of(record, dir);
        outcome.dry_run = true;
        return outcome;
    }
    return run_points(record, dir, options, out);
}

} // namespace

SweepOutcome run_sweep(const SweepOptions& options, std::ostream& out) {
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
    // Counted before anything is built: each point is a planned card, and a cross product grows
    // faster than anyone types it.
    if (const std::uint64_t count = count_points(axes, options.zip); count > options.max_points) {
        throw input_error(
            fmt::format("sweep: the --vary lists make {} points, over the limit of {}; "
                        "raise it with --max-points N if that many runs are meant",
                        count == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64") : std::to_string(count),
                        options.max_points));
    }
    const auto matrix = expand_matrix(axes, options.zip);
    // The card itself must be readable; what the overrides do to it is each point's business.
    const WorkloadCard base = WorkloadCard::load(options.card);
    check_axis_values(options.card, axes);

    SweepRecord record;
    record.card = fs::absolute(options.card).lexically_normal().string();
    record.card_sha256 = sha256_hex(read_file(options.card));
    record.cluster = options.cluster;
    record.zip = options.zip;
    record.axes = axes;
    record.created = utc_now();
    std::size_t runnable = 0;
    for (const auto& overrides : matrix) {
        // Nothing is written before the sweep directory exists, so Ctrl-C here just stops.
        if (interrupt_signal() != 0) {
            throw HarnessError("sweep: interrupted while checking the points; nothing was written", k_exit_interrupted);
        }
        SweepPoint point;
        point.overrides = overrides;
        point.reason = check_point(options.card, options.cluster, overrides, options.home);
        point.state = point.reason.empty() ? PointState::pending : PointState::skipped;
        runnable += point.reason.empty() ? 1U : 0U;
        out << fmt::format("  {} {}{}\n", point.reason.empty() ? "run " : "skip", point_label(point),
                           point.reason.empty() ? "" : ": " + terminal_text(point.reason));
        record.points.push_back(std::move(point));
    }
    out << fmt::format("sweep of {}: {} point(s), {} to run, {} skipped by validate --strict\n", base.name(), matrix.size(), runnable,
                       matrix.size() - runnable);
    if (runnable == 0) {
        // The reasons were progress, which -q drops: the error names one.
        throw input_error(fmt::format("sweep: no point passes validate --strict; nothing to run ({}: {})",
                                      point_label(record.points.front()), record.points.front().reason));
    }
    if (options.dry_run) {
        SweepOutcome outcome = outcome_of(record, {});
        outcome.dry_run = true;
        bill_points(outcome, options);
        return outcome;
    }
    const fs::path dir = absolute_path(new_sweep_dir(options.results, base.name()));
    record.id = dir.filename().string();
    record.save(dir);
    return run_points(record, dir, options, out);
}

Json sweep_outcome_to_json(const SweepOutcome& outcome) {
    Json json = Json::object();
    json["sweep_id"] = outcome.id.empty() ? Json() : Json(outcome.id);
    json["sweep_dir"] = outcome.sweep_dir.empty() ? Json() : Json(outcome.sweep_dir.string());
    json["card"] = outcome.card;
    json["dry_run"] = outcome.dry_run;
    json["interrupted"] = outcome.interrupted;
    json["exit_code"] = outcome.exit_code;
    json["points"] = Json::array();
    const bool billed = std::any_of(outcome.bills.begin(), outcome.bills.end(), [](const auto& bill) { return bill.has_value(); });
    for (std::size_t i = 0; i < outcome.points.size(); ++i) {
        Json entry = sweep_point_to_json(outcome.points[i]);
        if (outcome.dry_run) {
            entry["bill"] = i < outcome.bills.size() && outcome.bills[i] ? slurm_bill_to_json(*outcome.bills[i]) : Json();
        }
        json["points"].push_back(std::move(entry));
    }
    if (outcome.dry_run) {
        json["bill_total"] = billed ? Json(Json::Object{{"node_hours", outcome.total_node_hours},
                                                        {"allocation_hours", outcome.total_allocation_hours
                                                                                 ? Json(*outcome.total_allocation_hours)
                                                                                 : Json()}})
                                    : Json();
    }
    return json;
}

std::string format_sweep_outcome(const SweepOutcome& outcome) {
    std::size_t counts[6] = {};
    for (const auto& point : outcome.points) {
        ++counts[static_cast<int>(point.state)];
    }
    const auto count = [&counts](PointState state) { return counts[static_cast<int>(state)]; };
    if (outcome.dry_run) {
        std::string text = fmt::format("dry run: {} point(s), {} to run, {} skipped by validate --strict; nothing run\n",
                                       outcome.points.size(), count(PointState::pending), count(PointState::skipped));
        std::size_t billed = 0;
        for (std::size_t i = 0; i < outcome.points.size() && i < outcome.bills.size(); ++i) {
            if (const auto& bill = outcome.bills[i]) {
                ++billed;
                text += fmt::format(
                    "  bill: {}: at most {} node-hour(s) ({} node(s) x {} h), {}\n", point_label(outcome.points[i]),
                    hours_text(bill->node_hours), bill->nodes, hours_text(bill->time_limit_hours),
                    bill->allocation_hours
                        ? fmt::format("{} allocation hour(s) in QOS {}", hours_text(*bill->allocation_hours), bill->qos)
                        : "allocation hours unknown (charge factor " + bill->charge_factor_source + ")");
            }
        }
        if (billed > 0) {
            text += fmt::format(
                "bill: the {} point(s) can charge at most {} node-hour(s) in all, {}\n", billed, hours_text(outcome.total_node_hours),
                outcome.total_allocation_hours ? fmt::format("{} allocation hour(s)", hours_text(*outcome.total_allocation_hours))
                                               : std::string("allocation hours unknown (a point's charge factor is)"));
        }
        return text;
    }
    std::string text = fmt::format("sweep {}: {} completed, {} failed, {} skipped, {} cancelled, {} not run\n  sweep directory: {}\n",
                                   outcome.id, count(PointState::completed), count(PointState::failed), count(PointState::skipped),
                                   count(PointState::cancelled), count(PointState::pending), outcome.sweep_dir.string());
    for (const auto& point : outcome.points) {
        if (point.state == PointState::failed) {
            text += fmt::format("  failed: {}: {}\n", point_label(point), terminal_text(point.reason));
        } else if (point.reused) {
            text += fmt::format("  reused: {}: {}\n", point_label(point), terminal_text(point.run_dir));
        }
    }
    if (outcome.interrupted) {
        text += fmt::format("  interrupted; finish it with: ccl-harness sweep --resume {}\n", outcome.sweep_dir.string());
    }
    return text;
}

} // namespace harness
