#pragma once
// One zstd frame compressed on worker threads as data arrives, with memory that does not grow
// with the input. libarchive's own zstd filter offers only a thread count, and its memory grows
// by 10 to 17 MB per worker, which breaks any fixed budget on a many-core host.
#include <cstddef>
#include <functional>
#include <memory>

namespace harness {

/// The compression every bundle uses: level 3, content checksum, jobs of this many bytes. The
/// job size is fixed, not derived from the worker count, because zstd cuts its input at job
/// boundaries: with it fixed, 1 worker and 64 give the same bytes.
inline constexpr int k_zstd_level = 3;
inline constexpr std::size_t k_zstd_job_size = std::size_t{1} << 20;

/// A busy worker holds a job's slice of zstd's input ring (1 MB), its output buffer (1 MB) and a
/// level-3 context (1.2 MB): 20 of them, with the rest of the process, stay near 85 MB, under
/// the 128 MB budget (bench/README.md). Beyond 20 workers a disk, not the CPU, sets the pace.
inline constexpr int k_zstd_max_workers = 20;

/// Workers to use for `requested` (0 or below: the hardware threads), at most k_zstd_max_workers.
int zstd_workers(int requested);

class ZstdStream {
public:
    /// Receives compressed bytes in order; may throw, which aborts the write that called it.
    using Sink = std::function<void(const char* data, std::size_t size)>;

    /// `workers` as given (at least 1: zstd's single-thread mode 0 cuts blocks differently).
    ZstdStream(int workers, Sink sink);
    ~ZstdStream();
    ZstdStream(const ZstdStream&) = delete;
    ZstdStream& operator=(const ZstdStream&) = delete;

    /// Compresses `size` bytes; blocks only while every worker is busy. Throws HarnessError.
    void write(const void* data, std::size_t size);
    /// Flushes the last job and ends the frame. Throws HarnessError.
    void finish();

private:
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace harness
