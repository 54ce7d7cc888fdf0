#include "metrics/kernel_classifier.hpp"

#include "util/strings.hpp"

#include <array>
#include <cctype>

namespace harness::metrics {

namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

/// Demangled template kernels read "void ns::kernel<...>(...)": the return type is not the name.
std::string_view symbol(std::string_view name) {
    while (starts_with(name, "void ")) {
        name.remove_prefix(5);
    }
    return name;
}

/// The function's own name: the identifier after the last `::` before its template arguments or
/// parameters, so "void (anonymous namespace)::two_shot_all_reduce_kernel<float, 16, 8>(float**)"
/// gives "two_shot_all_reduce_kernel" whatever the namespace is spelt as (`(anonymous namespace)`
/// from c++filt and Kineto, `<unnamed>` from Nsight, `c10d::symmetric_memory` in older PyTorch).
std::string_view unqualified(std::string_view sym) {
    static constexpr std::string_view k_anonymous = "(anonymous namespace)";
    static constexpr std::string_view k_unnamed = "<unnamed>";
    std::size_t start = 0;
    std::size_t at = 0;
    while (at < sym.size()) {
        if (sym.compare(at, k_anonymous.size(), k_anonymous) == 0) {
            at += k_anonymous.size();
            continue;
        }
        if (sym.compare(at, k_unnamed.size(), k_unnamed) == 0) {
            at += k_unnamed.size();
            continue;
        }
        const char c = sym[at];
        if (c == '<' || c == '(' || c == ' ') {
            break;
        }
        if (c == ':' && at + 1 < sym.size() && sym[at + 1] == ':') {
            at += 2;
            start = at;
            continue;
        }
        ++at;
    }
    return sym.substr(start, at - start);
}

/// NCCL and RCCL name every device kernel nccl<Something>Kernel...: ncclDevKernel_* (2.19+, RCCL),
/// ncclKernel_* (2.9-2.18), ncclSymkDevKernel_* (symmetric kernels, 2.27+), and before 2.9 the
/// collective first: ncclAllReduceRingLLKernel_sum_f32, ncclSendRecvKernel_copy_i8. rccl* is kept
/// from the earlier classifier for RCCL builds that prefix their own entry points.
bool is_nccl_kernel(std::string_view sym) {
    if (starts_with(sym, "rccl")) {
        return true;
    }
    if (!starts_with(sym, "nccl") || sym.size() < 5 || std::isupper(static_cast<unsigned char>(sym[4])) == 0) {
        return false;
    }
    return contains(unqualified(sym), "Kernel");
}

/// DeepEP keeps its transfer kernels in intranode/internode/internode_ll (v1 directly under
/// deep_ep::, v2 under deep_ep::legacy::; DeepSeek's own build spells it dpsk::ep::) and the v2
/// elastic kernels (dispatch_impl, combine_impl, barrier_impl, pp_send_impl...) in
/// deep_ep::elastic::. The layout namespace (get_dispatch_layout) only counts tokens on the local
/// GPU and is compute.
bool is_deepep_transfer(std::string_view sym) {
    if (!contains(sym, "deep_ep::") && !contains(sym, "dpsk::ep::")) {
        return false;
    }
    static constexpr std::array<std::string_view, 4> k_namespaces = {
        "::intranode::", "::internode::", "::internode_ll::", "deep_ep::elastic::"};
    for (const auto part : k_namespaces) {
        if (contains(sym, part)) {
            return true;
        }
    }
    return false;
}

/// PyTorch symmetric memory (torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu)
/// defines its kernels in an anonymous namespace, so the trace shows only the function name:
/// matched exactly, not as a substring, so that an unrelated "..._reduce_kernel" stays compute.
/// two_shot_all_reduce_kernel also serves symm_mem's reduce_scatter_out.
bool is_symmetric_memory(std::string_view sym) {
    if (contains(sym, "c10d::symmetric_memory::")) {
        return true;
    }
    static constexpr std::array<std::string_view, 6> k_kernels = {"multimem_all_reduce_kernel", "multimem_one_shot_all_reduce_kernel",
                                                                  "multimem_all_gather_kernel", "one_shot_all_reduce_kernel",
                                                                  "two_shot_all_reduce_kernel", "two_shot_all_reduce_kernel_inplace"};
    const std::string_view own = unqualified(sym);
    for (const auto kernel : k_kernels) {
        if (own == kernel) {
            return true;
        }
    }
    return false;
}

} // namespace

const char* family_label(CommFamily family) {
    switch (family) {
    case CommFamily::none: return "compute";
    case CommFamily::nccl: return "NCCL/RCCL";
    case CommFamily::msccl: return "MSCCL/MSCCL++";
    case CommFamily::deepep: return "DeepEP";
    case CommFamily::nvshmem: return "NVSHMEM";
    case CommFamily::custom_allreduce: return "custom all-reduce";
    case CommFamily::symmetric_memory: return "PyTorch symmetric memory";
    case CommFamily::host: return "host collective (gloo/c10d)";
    case CommFamily::xla: return "XLA collective";
    }
    return "compute";
}

CommFamily classify_kernel(std::string_view name) {
    // Where each name comes from, with the commit read: docs/kernel-families.md.
    const std::string_view sym = symbol(name);
    if (is_nccl_kernel(sym)) {
        return CommFamily::nccl;
    }
    // vllm:: and sglang::cross_device_reduce_{1,2}stage, TensorRT-LLM's (and SGLang's trt_llm::)
    // one/twoShotAllReduceKernel, FlashInfer's allreduce_fusion_kernel_*, quickreduce (ROCm), and
    // SGLang's MSCCL++-based sglang::allreduce_1shotLL_{1,2}node, whose parameters name mscclpp::
    // handles: checked before MSCCL++ so that the family does not depend on whether the trace
    // kept the parameter list.
    static constexpr std::array<std::string_view, 6> k_custom = {"cross_device_reduce",    "oneShotAllReduce",
                                                                 "twoShotAllReduce",       "allreduce_fusion_kernel",
                                                                 "quickreduce::allreduce", "sglang::allreduce_"};
    for (const auto part : k_custom) {
        if (contains(sym, part)) {
            return CommFamily::custom_allreduce;
        }
    }
    if (starts_with(sym, "mscclKernel") || contains(sym, "mscclpp")) {
        return CommFamily::msccl;
    }
    if (is_deepep_transfer(sym)) {
        return CommFamily::deepep;
    }
    if (contains(sym, "nvshmem")) {
        return CommFamily::nvshmem;
    }
    if (is_symmetric_memory(sym)) {
        return CommFamily::symmetric_memory;
    }
    return CommFamily::none;
}

std::string collective_operation(std::string_view name) {
    // Spellings differ by library (AllReduce, all_reduce, allreduce_, all-reduce-start): compare
    // letters and digits only.
    std::string folded;
    for (const char c : name) {
        if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
            folded += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    static const std::array<std::pair<const char*, const char*>, 12> k_operations = {{
        {"reducescatter", "reduce_scatter"},
        {"allgather", "all_gather"},
        {"allreduce", "all_reduce"},
        {"crossdevicereduce", "all_reduce"},
        {"alltoall", "all_to_all"},
        {"all2all", "all_to_all"},
        {"broadcast", "broadcast"},
        {"collectivepermute", "send_recv"},
        {"sendrecv", "send_recv"},
        {"barrier", "barrier"},
        {"send", "send_recv"},
        {"recv", "send_recv"},
    }};
    for (const auto& [needle, operation] : k_operations) {
        if (folded.find(needle) != std::string::npos) {
            return operation;
        }
    }
    // After the compound names: "reduce" alone is in reducescatter and allreduce.
    return folded.find("reduce") != std::string::npos ? "reduce" : "other";
}

HostRole host_role(std::string_view name) {
    if (starts_with(name, "gloo:") || starts_with(name, "c10d::") || starts_with(name, "nccl:") ||
        starts_with(name, "record_param_comms")) {
        return HostRole::communication;
    }
    if (starts_with(name, "aten::")) {
        return HostRole::compute;
    }
    return HostRole::other;
}

XlaCollective classify_xla_op(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string_view text(lower);
    if (starts_with(text, "%")) {
        text.remove_prefix(1);
    }
    static constexpr std::array<std::string_view, 5> k_kinds = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                                                "collective-permute"};
    XlaCollective out;
    std::size_t first = std::string_view::npos;
    for (const auto kind : k_kinds) {
        const std::size_t at = text.find(kind);
        if (at < first) {
            first = at;
            out.kind = std::string(kind);
        }
    }
    out.collective = first != std::string_view::npos;
    std::size_t end = out.collective ? first + out.kind.size() : 0;
    // Point-to-point ops only count by their own name (send.1, recv-done.2), never inside another.
    if (!out.collective) {
        for (const std::string_view kind : {std::string_view("send"), std::string_view("recv")}) {
            if (starts_with(text, kind) && (text.size() == kind.size() || text[kind.size()] == '-' || text[kind.size()] == '.')) {
                out.collective = true;
                out.kind = std::string(kind);
                end = kind.size();
            }
        }
    }
    if (!out.collective) {
        return out;
    }
    const std::string_view rest = text.substr(end);
    if (starts_with(rest, "-start")) {
        out.phase = XlaPhase::start;
    } else if (starts_with(rest, "-done")) {
        out.phase = XlaPhase::done;
    }
    return out;
}

} // namespace harness::metrics
