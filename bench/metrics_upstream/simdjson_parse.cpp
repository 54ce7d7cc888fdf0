// The physical reference for bench/metrics_upstream/run.sh: how fast simdjson itself gets through
// the same trace files on the same machine, single-threaded, from the page cache.
//
// For each file, two passes (each includes reading the file, as ccl-harness must):
//   dom       simdjson::dom::parser::load, the whole document parsed to a tape;
//   ondemand  padded_string::load, then every traceEvents element visited, reading the fields the
//             metrics need (ph, cat, name, ts, dur); everything else is skipped unparsed.
// Each pass runs --repeat times; the median is printed, as process CPU seconds (one thread, so
// MB/s per core is bytes / CPU seconds) and wall seconds:
//   FILE BYTES EVENTS DOM_CPU_S DOM_WALL_S ONDEMAND_CPU_S ONDEMAND_WALL_S
//
// Usage: simdjson_parse [--repeat N] FILE...
// Build: g++ -O3 -std=c++17 -o simdjson_parse simdjson_parse.cpp -lsimdjson
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Times {
    double cpu_s = 0;
    double wall_s = 0;
};

double cpu_now() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

template <typename Work>
Times timed(Work&& work) {
    const double cpu_start = cpu_now();
    const auto wall_start = std::chrono::steady_clock::now();
    work();
    Times times;
    times.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    times.cpu_s = cpu_now() - cpu_start;
    return times;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Every traceEvents element, the five fields read; returns the number of events. The sums keep
// the reads from being optimized away and are printed to stderr.
size_t ondemand_pass(const std::string& path, double& checksum) {
    simdjson::padded_string json = simdjson::padded_string::load(path).value();
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc = parser.iterate(json).value();
    size_t events = 0;
    for (auto element : doc.find_field_unordered("traceEvents").get_array()) {
        simdjson::ondemand::object event = element.get_object().value();
        ++events;
        std::string_view text;
        double number = 0;
        if (event.find_field_unordered("ph").get_string().get(text) == simdjson::SUCCESS) {
            checksum += static_cast<double>(text.size());
        }
        if (event.find_field_unordered("cat").get_string().get(text) == simdjson::SUCCESS) {
            checksum += static_cast<double>(text.size());
        }
        if (event.find_field_unordered("name").get_string().get(text) == simdjson::SUCCESS) {
            checksum += static_cast<double>(text.size());
        }
        if (event.find_field_unordered("ts").get_double().get(number) == simdjson::SUCCESS) {
            checksum += number * 1e-12;
        }
        if (event.find_field_unordered("dur").get_double().get(number) == simdjson::SUCCESS) {
            checksum += number;
        }
    }
    return events;
}

}  // namespace

int main(int argc, char** argv) {
    int repeat = 3;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else {
            files.emplace_back(argv[i]);
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: simdjson_parse [--repeat N] FILE...\n");
        return 2;
    }
    try {
        simdjson::dom::parser dom_parser;
        for (const std::string& path : files) {
            std::vector<double> dom_cpu, dom_wall, od_cpu, od_wall;
            size_t events = 0;
            double checksum = 0;
            for (int round = 0; round < repeat; ++round) {
                Times dom = timed([&] {
                    simdjson::dom::element doc = dom_parser.load(path).value();
                    events = simdjson::dom::array(doc["traceEvents"]).size();
                });
                dom_cpu.push_back(dom.cpu_s);
                dom_wall.push_back(dom.wall_s);
                Times od = timed([&] { events = ondemand_pass(path, checksum); });
                od_cpu.push_back(od.cpu_s);
                od_wall.push_back(od.wall_s);
            }
            const size_t bytes = static_cast<size_t>(std::filesystem::file_size(path));
            std::printf("%s %zu %zu %.6f %.6f %.6f %.6f\n", path.c_str(), bytes, events, median(dom_cpu),
                        median(dom_wall), median(od_cpu), median(od_wall));
            std::fprintf(stderr, "%s: checksum %.6g\n", path.c_str(), checksum);
        }
    } catch (const simdjson::simdjson_error& error) {
        std::fprintf(stderr, "simdjson: %s\n", error.what());
        return 1;
    }
    return 0;
}
