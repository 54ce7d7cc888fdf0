// What makes a comparison readable at a glance: labels made of the differing card values,
// throughput per device, the rankings and their caveat, n/a metrics collapsed into notes, and the
// spread of the steps. Declared in compare.hpp.
#include "util/strings.hpp"
#include "workflows/compare.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace harness {

namespace {

/// The names people use for the fields sweeps vary most.
const std::map<std::string, std::string>& short_keys() {
    static const std::map<std::string, std::string> keys = {
        {"workload.data.batch_size", "bs"},
        {"workload.data.seq_len", "seq"},
        {"workload.hardware.xpu_spec.total_count", "devices"},
    };
    return keys;
}

bool all_digits(const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string short_key(const std::string& path) {
    const auto known = short_keys().find(path);
    if (known != short_keys().end()) {
        return known->second;
    }
    const std::vector<std::string> parts = split(path, '.');
    if (parts.size() >= 2 && all_digits(parts.back())) {
        return parts[parts.size() - 2] + "." + parts.back();
    }
    return parts.empty() ? path : parts.back();
}

std::optional<double> card_number(const std::map<std::string, std::string>& card, const std::string& path) {
    const auto found = card.find(path);
    if (found == card.end()) {
        return std::nullopt;
    }
    try {
        std::size_t used = 0;
        const double value = std::stod(found->second, &used);
        if (used != found->second.size() || !std::isfinite(value)) {
            return std::nullopt;
        }
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

constexpr std::size_t k_label_parts = 4;

} // namespace

std::vector<std::string> run_labels(const std::vector<ComparedRun>& runs, const std::vector<CardDifference>& differences) {
    std::map<std::string, std::size_t> key_uses;
    for (const CardDifference& difference : differences) {
        ++key_uses[short_key(difference.path)];
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        std::vector<std::string> parts;
        for (const CardDifference& difference : differences) {
            const std::string key = short_key(difference.path);
            const auto& value = difference.values[i];
            parts.push_back(fmt::format("{}={}", key_uses[key] > 1 ? difference.path : key,
                                        value ? (value->empty() ? std::string("''") : *value) : std::string("-")));
        }
        // A reproduction says what it reproduces, whatever else tells it apart: the pair is the point.
        if (!runs[i].reproduces.empty()) {
            parts.insert(parts.begin(), "reproduces " + runs[i].reproduces);
        }
        if (parts.empty()) {
            out.push_back(runs[i].name);
        } else if (parts.size() > k_label_parts) {
            const std::size_t more = parts.size() - k_label_parts;
            parts.resize(k_label_parts);
            out.push_back(fmt::format("{} +{} more", join(parts, " "), more));
        } else {
            out.push_back(join(parts, " "));
        }
    }
    // Different runs must never read the same.
    std::map<std::string, std::size_t> seen;
    for (std::string& label : out) {
        const std::size_t times = ++seen[label];
        if (times > 1) {
            label += fmt::format(" ({})", times);
        }
    }
    return out;
}

Throughput throughput_per_device(const std::map<std::string, std::string>& card, const std::optional<double>& step) {
    Throughput out;
    const std::optional<double> batch = card_number(card, "workload.data.batch_size");
    const std::optional<double> seq = card_number(card, "workload.data.seq_len");
    const std::optional<double> devices = card_number(card, "workload.hardware.xpu_spec.total_count");
    out.unit = seq ? "tokens/s/device" : "samples/s/device";
    if (!step || !(*step > 0)) {
        out.why = "no avg_step_time";
    } else if (!batch || !(*batch > 0)) {
        out.why = "no workload.data.batch_size in the card";
    } else if (!devices || !(*devices > 0)) {
        out.why = "no workload.hardware.xpu_spec.total_count in the card";
    } else if (seq && !(*seq > 0)) {
        out.why = "workload.data.seq_len is not positive";
    } else {
        const double work = *batch * (seq ? *seq : 1.0);
        out.value = work / *step / *devices;
        out.basis = seq ? fmt::format("batch_size {} x seq_len {} / avg_step_time {:.6g} s / {} devices", *batch, *seq, *step,
                                      *devices)
                        : fmt::format("batch_size {} / avg_step_time {:.6g} s / {} devices", *batch, *step, *devices);
    }
    return out;
}

std::vector<std::size_t> rank_by_throughput(const std::vector<ComparedRun>& runs) {
    std::vector<std::size_t> out(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        out[i] = i;
    }
    std::stable_sort(out.begin(), out.end(), [&runs](std::size_t a, std::size_t b) {
        const std::optional<double>& x = runs[a].throughput.value;
        const std::optional<double>& y = runs[b].throughput.value;
        return x && (!y || *x > *y);
    });
    return out;
}

std::string step_ranking_note(const std::vector<ComparedRun>& runs) {
    std::vector<std::string> sizes;
    for (const ComparedRun& run : runs) {
        const auto found = run.card.find("workload.data.batch_size");
        sizes.push_back(found == run.card.end() ? std::string("-") : found->second);
    }
    if (std::all_of(sizes.begin(), sizes.end(), [&sizes](const std::string& size) { return size == sizes.front(); })) {
        return {};
    }
    return fmt::format("the batch sizes differ ({}): a shorter step may only be a smaller batch, so rank by throughput per "
                       "device; the step-time order is shown for reference",
                       join(sizes, ", "));
}

std::vector<MissingNote> collapse_missing(const std::vector<ComparedRun>& runs) {
    std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        for (const auto& [name, metric] : runs[i].metrics) {
            if (!metric.value) {
                groups[{name, metric.why}].push_back(i);
            }
        }
    }
    std::vector<MissingNote> out;
    for (auto& [key, indices] : groups) {
        out.push_back(MissingNote{key.first, key.second, std::move(indices)});
    }
    return out;
}

std::string missing_note_text(const MissingNote& note, std::size_t runs) {
    return fmt::format("{}: n/a for {} of {} run{}: {}", note.metric, note.runs.size(), runs, runs == 1 ? "" : "s",
                       note.why.empty() ? std::string("no reason recorded") : note.why);
}

std::optional<StepSpread> step_spread(const RunDetail& detail) {
    std::vector<double> all;
    for (const std::vector<double>& rank : detail.steps) {
        all.insert(all.end(), rank.begin(), rank.end());
    }
    if (all.empty()) {
        return std::nullopt;
    }
    std::sort(all.begin(), all.end());
    const std::size_t n = all.size();
    StepSpread out;
    out.count = n;
    out.min = all.front();
    out.max = all.back();
    out.median = n % 2 == 1 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2;
    return out;
}

} // namespace harness
