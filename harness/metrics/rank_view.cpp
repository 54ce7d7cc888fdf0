#include "metrics/rank_view.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace harness::metrics {

namespace {

constexpr unsigned char k_patterns = 4;

std::string pid_of(const std::string& thread_key) { return thread_key.substr(0, thread_key.find('\t')); }

bool is_xla_trace(const RankTrace& trace) {
    if (!trace.xla_ops.empty()) {
        return true;
    }
    for (const auto& step : trace.steps) {
        if (step.kind == StepKind::xla_core_step || step.kind == StepKind::xla_python_step || step.kind == StepKind::xla_step_marker) {
            return true;
        }
    }
    return false;
}

} // namespace

const char* basis_label(Basis basis) {
    switch (basis) {
    case Basis::none: return "no spans";
    case Basis::gpu_kernels: return "GPU kernels";
    case Basis::host_ops: return "host-side (CPU operators)";
    case Basis::xla_ops: return "XLA ops";
    }
    return "";
}

RankView::RankView(long long rank, RankTrace trace) : m_rank(rank), m_trace(std::move(trace)) {
    if (!m_trace.kernels.empty()) {
        m_basis = Basis::gpu_kernels;
    } else if (is_xla_trace(m_trace)) {
        m_basis = Basis::xla_ops;
    } else if (!m_trace.host_ops.empty()) {
        m_basis = Basis::host_ops;
    }
    // The reference patterns are regular expressions: evaluate them once per distinct name.
    m_reference_bits.assign(m_trace.names.size(), 0);
    m_family.assign(m_trace.names.size(), CommFamily::none);
    std::vector<bool> used(m_trace.names.size(), false);
    for (const auto* spans : {&m_trace.kernels, &m_trace.xla_ops, &m_trace.host_ops}) {
        for (const Span& span : *spans) {
            used[span.name] = true;
        }
    }
    for (NameId id = 0; id < m_trace.names.size(); ++id) {
        if (!used[id]) {
            continue;
        }
        const std::string& text = m_trace.names.text(id);
        switch (m_basis) {
        case Basis::gpu_kernels: m_family[id] = classify_kernel(text); break;
        case Basis::host_ops: m_family[id] = host_role(text) == HostRole::communication ? CommFamily::host : CommFamily::none; break;
        case Basis::xla_ops: m_family[id] = classify_xla_op(text).collective ? CommFamily::xla : CommFamily::none; break;
        case Basis::none: break;
        }
        for (unsigned char p = 0; p < k_patterns; ++p) {
            if (reference_is_comm(static_cast<ReferencePattern>(p), text)) {
                m_reference_bits[id] = static_cast<unsigned char>(m_reference_bits[id] | (1U << p));
            }
        }
    }
    switch (m_basis) {
    case Basis::gpu_kernels:
        m_standard.reserve(m_trace.kernels.size());
        for (const Span& k : m_trace.kernels) {
            m_standard.push_back(ActivitySpan{k.ts, k.dur, k.name, m_family[k.name] != CommFamily::none});
        }
        break;
    case Basis::host_ops:
        for (const Span& op : m_trace.host_ops) {
            m_standard.push_back(ActivitySpan{op.ts, op.dur, op.name, m_family[op.name] != CommFamily::none});
        }
        break;
    case Basis::xla_ops: build_xla_standard(); break;
    case Basis::none: break;
    }
}

CommFamily RankView::kernel_family(NameId name) const { return name < m_family.size() ? m_family[name] : CommFamily::none; }

bool RankView::reference_comm(ReferencePattern pattern, NameId name) const {
    if (name < m_reference_bits.size()) {
        return (m_reference_bits[name] >> static_cast<unsigned>(pattern) & 1U) != 0;
    }
    return reference_is_comm(pattern, m_trace.names.text(name));
}

std::vector<ActivitySpan> RankView::reference_activity(ReferencePattern pattern) const {
    std::vector<ActivitySpan> out;
    if (!reference_reads_events()) {
        return out;
    }
    if (m_basis == Basis::xla_ops) {
        for (const Span& op : m_trace.xla_ops) {
            const bool comm = reference_comm(pattern, op.name);
            if (comm || reference_is_xla_compute(m_trace.names.text(op.name))) {
                out.push_back(ActivitySpan{op.ts, op.dur, op.name, comm});
            }
        }
        return out;
    }
    out.reserve(m_trace.kernels.size());
    for (const Span& k : m_trace.kernels) {
        out.push_back(ActivitySpan{k.ts, k.dur, k.name, reference_comm(pattern, k.name)});
    }
    return out;
}

void RankView::build_xla_standard() {
    // Device ops only: the pids whose process_name names a device, and within them the
    // "XLA Ops" threads when the trace labels its threads (module and step rows span whole steps).
    std::set<std::string> device_pids;
    for (const auto& [pid, name] : m_trace.process_names) {
        if (name.find("/device:") != std::string::npos) {
            device_pids.insert(pid);
        }
    }
    std::set<std::string> op_threads;
    for (const auto& [thread, name] : m_trace.thread_names) {
        if (name == "XLA Ops" && (device_pids.empty() || device_pids.count(pid_of(thread)) > 0)) {
            op_threads.insert(thread);
        }
    }
    std::vector<Span> ops;
    for (const Span& op : m_trace.xla_ops) {
        const std::string& thread = m_trace.names.text(op.thread);
        if (!op_threads.empty() ? op_threads.count(thread) > 0 : (device_pids.empty() || device_pids.count(pid_of(thread)) > 0)) {
            ops.push_back(op);
        }
    }
    std::stable_sort(ops.begin(), ops.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
    // An async collective is in flight from its -start to its -done: pair them first in, first
    // out per device and kind, and count the whole flight as communication.
    std::map<std::pair<std::string, std::string>, std::deque<const Span*>> open;
    for (const Span& op : ops) {
        const XlaCollective what = classify_xla_op(m_trace.names.text(op.name));
        if (!what.collective) {
            m_standard.push_back(ActivitySpan{op.ts, op.dur, op.name, false});
            continue;
        }
        const auto key = std::make_pair(pid_of(m_trace.names.text(op.thread)), what.kind);
        if (what.phase == XlaPhase::start) {
            open[key].push_back(&op);
        } else if (what.phase == XlaPhase::done && !open[key].empty()) {
            const Span* start = open[key].front();
            open[key].pop_front();
            m_standard.push_back(ActivitySpan{start->ts, op.ts + op.dur - start->ts, start->name, true});
        } else {
            m_standard.push_back(ActivitySpan{op.ts, op.dur, op.name, true});
        }
    }
    for (const auto& [key, starts] : open) {
        for (const Span* start : starts) {
            m_standard.push_back(ActivitySpan{start->ts, start->dur, start->name, true});
        }
    }
}

} // namespace harness::metrics
