#pragma once
// The one kernel classifier of the default mode: which spans move data between ranks. It knows
// the communication libraries by the symbols they compile to, instead of by words a compute kernel
// may also contain ("collective" is in FlashAttention-3's CollectiveMainloopBwd and in every
// CUTLASS 3 GEMM, cutlass::gemm::collective::CollectiveMma).
#include <string>
#include <string_view>

namespace harness::metrics {

enum class CommFamily : unsigned char {
    none,             ///< not communication
    nccl,             ///< NCCL and RCCL: ncclDevKernel_*, ncclKernel_*, ncclSymkDevKernel_*, nccl<Coll>Kernel_* (<2.9), rccl*
    msccl,            ///< MSCCL (mscclKernel_*) and MSCCL++ (mscclpp)
    deepep,           ///< DeepEP intranode/internode/internode_ll (v1, v2 legacy::) and elastic:: kernels
    nvshmem,          ///< NVSHMEM device kernels
    custom_allreduce, ///< vLLM/SGLang/TensorRT-LLM/FlashInfer custom all-reduce (cross_device_reduce, one/twoShot...)
    symmetric_memory, ///< PyTorch symmetric memory: multimem_*/one_shot_/two_shot_all_reduce_kernel in any namespace
    host,             ///< host-side collectives: gloo:*, c10d::*, record_param_comms, nccl:*
    xla,              ///< XLA collectives (all-reduce, all-gather, ..., and their -start/-done)
};

/// A short label for reports: "NCCL", "DeepEP", "gloo/c10d (host)"...
const char* family_label(CommFamily family);

/// A GPU kernel (Kineto cat "kernel"), by its demangled name (a leading "void " is ignored).
/// The families, their real names and sources: docs/kernel-families.md.
CommFamily classify_kernel(std::string_view name);

/// The collective operation a communication span performs, by its name: "all_reduce",
/// "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv",
/// "barrier", or "other" (DeepEP dispatch/combine, record_param_comms without a name...).
std::string collective_operation(std::string_view name);

enum class HostRole : unsigned char {
    other,         ///< not used by the metrics (Python frames, autograd bookkeeping...)
    compute,       ///< aten:: operators
    communication, ///< gloo:*, c10d::*, record_param_comms, nccl:* on host threads
};

/// A host operator of a CPU trace (cpu_op or user_annotation). On CPU-only traces (gloo) these
/// stand in for kernels; the report labels such values host-side.
HostRole host_role(std::string_view name);

enum class XlaPhase : unsigned char { whole, start, done };

struct XlaCollective {
    bool collective = false;
    XlaPhase phase = XlaPhase::whole;
    std::string kind; ///< all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, send, recv
};

/// An XLA HLO op name as TPU traces show it ("all-gather-start.3", "reduce-scatter.1",
/// "fusion.12"). `broadcast` is a local op in HLO and is not a collective.
XlaCollective classify_xla_op(std::string_view name);

} // namespace harness::metrics
