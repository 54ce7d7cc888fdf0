#pragma once
// A rank's trace as the metrics see it in one mode: which spans count (GPU kernels, host
// operators on CPU-only traces, XLA ops), and which of them are communication, by the default
// classifier or by one of the CCL-Bench patterns.
#include "metrics/kernel_classifier.hpp"
#include "metrics/reference_patterns.hpp"
#include "metrics/trace_events.hpp"

#include <vector>

namespace harness::metrics {

enum class MetricMode : unsigned char { standard, reference };

/// What a rank's activity spans are.
enum class Basis : unsigned char {
    none,        ///< nothing to measure
    gpu_kernels, ///< cat "kernel"
    host_ops,    ///< CPU-only trace: aten:: operators and gloo/c10d collectives on host threads
    xla_ops,     ///< XLA/TPU trace: HLO ops on the device
};

const char* basis_label(Basis basis);

struct ActivitySpan {
    double ts = 0;
    double dur = 0;
    NameId name = 0;
    bool comm = false; ///< otherwise compute
};

class RankView {
public:
    RankView(long long rank, RankTrace trace);

    long long rank() const { return m_rank; }
    const RankTrace& trace() const { return m_trace; }
    Basis basis() const { return m_basis; }
    /// The CCL-Bench tools read traceEvents of an object only: a legacy array is empty to them.
    bool reference_reads_events() const { return m_trace.format == TraceFormat::kineto; }

    /// Default mode: the spans of the rank's basis; comm by the one classifier (XLA -start/-done
    /// pairs become one span from the start of -start to the end of -done).
    const std::vector<ActivitySpan>& standard_activity() const { return m_standard; }
    /// Reference mode: every GPU kernel (XLA: every uncategorized op), comm by `pattern`;
    /// for XLA the compute spans are the tool's keyword matches and the rest are dropped.
    std::vector<ActivitySpan> reference_activity(ReferencePattern pattern) const;

    /// Default-mode family of a kernel name (none for compute).
    CommFamily kernel_family(NameId name) const;
    bool reference_comm(ReferencePattern pattern, NameId name) const;

private:
    void build_xla_standard();

    long long m_rank;
    RankTrace m_trace;
    Basis m_basis = Basis::none;
    std::vector<ActivitySpan> m_standard;
    std::vector<CommFamily> m_family;            ///< per name id, default classifier
    std::vector<unsigned char> m_reference_bits; ///< per name id: bit p set when pattern p matches
};

} // namespace harness::metrics
