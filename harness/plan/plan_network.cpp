#include "plan/plan_steps.hpp"

#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

/// Whether an interface name is the loopback one: Linux names it "lo"; "lo0" is the BSD/macOS
/// spelling a card copied from a laptop may carry.
bool is_loopback_name(const std::string& name) {
    if (!starts_with(name, "lo")) {
        return false;
    }
    const std::string rest = name.substr(2);
    return rest.empty() || all_digits(rest);
}

} // namespace

std::vector<std::string> loopback_interfaces(const std::string& value) {
    // NCCL reads NCCL_SOCKET_IFNAME as a comma-separated list of prefixes: a leading '^'
    // excludes every listed one, a leading '=' asks for exact names (NCCL's docs, "Environment
    // Variables", NCCL_SOCKET_IFNAME). Gloo (torch's ProcessGroupGloo, GLOO_SOCKET_IFNAME) takes
    // a comma-separated list of exact names. An excluded list never pins anything.
    std::string list = trim(value);
    if (starts_with(list, "^")) {
        return {};
    }
    if (starts_with(list, "=")) {
        list = list.substr(1);
    }
    std::vector<std::string> out;
    for (const std::string& entry : split(list, ',')) {
        const std::string name = trim(entry);
        if (is_loopback_name(name)) {
            out.push_back(name);
        }
    }
    return out;
}

void check_socket_interfaces(const Plan& plan, PlanFindings& findings) {
    // On one node the ranks meet over loopback and the pin is harmless (tiny-ddp's card pins gloo
    // to `lo` so that a laptop with several interfaces picks a working one). Across nodes every
    // rank would advertise 127.0.0.1 to its peers, and the job fails after its queue wait with
    // "connect [127.0.0.1]:PORT: Connection refused".
    if (plan.nodes <= 1) {
        return;
    }
    for (const char* variable : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"}) {
        for (const auto& [key, value] : plan.env) {
            if (key != variable) {
                continue;
            }
            const std::vector<std::string> loopback = loopback_interfaces(value);
            if (loopback.empty()) {
                continue;
            }
            const auto origin = plan.origins.find("env." + key);
            const bool from_card = origin != plan.origins.end() &&
                                   (origin->second.kind == Origin::Kind::card || origin->second.kind == Origin::Kind::set ||
                                    origin->second.kind == Origin::Kind::user);
            // A profile's value is reported at the card field that would override it.
            const std::string field = from_card ? origin->second.detail : "Model-executor.communication_library.env." + key;
            const std::string from = from_card || origin == plan.origins.end()
                                         ? std::string()
                                         : fmt::format(" (set by the cluster profile at {})", origin->second.where);
            findings.problem(field, fmt::format("{}={}{} pins the sockets to the loopback interface {}, but the job spans {} "
                                                "nodes: the ranks off the first node cannot reach it; name the nodes' "
                                                "network interface instead, or remove the variable",
                                                key, enquote(value), from, enquote(loopback.front()), plan.nodes));
        }
    }
}

} // namespace harness
