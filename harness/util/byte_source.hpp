#pragma once
// The bytes of one trace file in order, inflated on the fly when the file is gzip. Traces are
// read once, front to back, in fixed-size pieces: memory stays flat whatever the file size.
#include "util/fs.hpp"

#include <cstddef>
#include <memory>

namespace harness {

class ByteSource {
public:
    /// Opens `path`; gzip is recognised by its magic bytes, not by the name. Throws HarnessError
    /// (exit 2) naming the file when it cannot be opened.
    static std::unique_ptr<ByteSource> open(const fs::path& path);

    virtual ~ByteSource() = default;
    /// Copies up to `max` bytes to `out` and returns how many; 0 only at the end of the data.
    /// A read error or a damaged or truncated gzip stream throws HarnessError naming the file.
    virtual std::size_t read(char* out, std::size_t max) = 0;
    /// True when the bytes are inflated from gzip (offsets in errors are then uncompressed ones).
    virtual bool compressed() const = 0;
};

} // namespace harness
