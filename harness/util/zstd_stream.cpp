#include "util/zstd_stream.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <thread>
#include <vector>
#include <zstd.h>

namespace harness {

namespace {

struct CctxFree {
    void operator()(ZSTD_CCtx* cctx) const { ZSTD_freeCCtx(cctx); }
};

void check(std::size_t code, const char* what) {
    if (ZSTD_isError(code) != 0U) {
        throw HarnessError(fmt::format("zstd: {}: {}", what, ZSTD_getErrorName(code)));
    }
}

} // namespace

int zstd_workers(int requested) {
    int workers = requested;
    if (workers <= 0) {
        workers = static_cast<int>(std::thread::hardware_concurrency());
    }
    return std::clamp(workers, 1, k_zstd_max_workers);
}

struct ZstdStream::State {
    std::unique_ptr<ZSTD_CCtx, CctxFree> cctx;
    std::vector<char> out;
    Sink sink;

    /// Runs one compression step and hands on what it produced; returns zstd's "left to flush".
    std::size_t step(ZSTD_inBuffer& in, ZSTD_EndDirective directive) {
        ZSTD_outBuffer buffer{out.data(), out.size(), 0};
        const std::size_t left = ZSTD_compressStream2(cctx.get(), &buffer, &in, directive);
        check(left, "compression failed");
        if (buffer.pos > 0) {
            sink(out.data(), buffer.pos);
        }
        return left;
    }
};

ZstdStream::ZstdStream(int workers, Sink sink) : m_state(std::make_unique<State>()) {
    m_state->cctx.reset(ZSTD_createCCtx());
    if (!m_state->cctx) {
        throw HarnessError("zstd: out of memory");
    }
    ZSTD_CCtx* cctx = m_state->cctx.get();
    check(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, k_zstd_level), "level");
    check(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1), "checksum");
    // A libzstd built without threads (Debian's libzstd.a, which the portable build links) refuses
    // worker threads: it then compresses on this thread. Same content, but not the same bytes as
    // the threaded frames (nbWorkers >= 1 gives one output whatever the count), so a bundle is
    // byte-identical across builds of one kind only (docs/portable.md).
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, std::max(workers, 1))) == 0U) {
        check(ZSTD_CCtx_setParameter(cctx, ZSTD_c_jobSize, static_cast<int>(k_zstd_job_size)), "job size");
    }
    m_state->out.resize(ZSTD_CStreamOutSize());
    m_state->sink = std::move(sink);
}

ZstdStream::~ZstdStream() = default;

void ZstdStream::write(const void* data, std::size_t size) {
    // Never call with ZSTD_e_end first: zstd would switch to one-shot compression, whose bytes
    // differ from the streamed ones.
    ZSTD_inBuffer in{data, size, 0};
    while (in.pos < in.size) {
        m_state->step(in, ZSTD_e_continue);
    }
}

void ZstdStream::finish() {
    ZSTD_inBuffer in{nullptr, 0, 0};
    while (m_state->step(in, ZSTD_e_end) != 0) {
    }
}

} // namespace harness
