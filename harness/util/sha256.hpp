#pragma once
// The one sha256 (OpenSSL): streaming, of a file in bounded memory, or of bytes in memory.
#include "util/fs.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace harness {

/// Incremental sha256.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, std::size_t size);
    /// Lowercase hex of everything given so far; the hasher cannot be updated afterwards.
    std::string finish();

private:
    struct Context;
    std::unique_ptr<Context> m_context;
};

/// sha256 of a file's content, lowercase hex, read in chunks: memory stays bounded.
std::string sha256_file(const fs::path& path);

/// sha256 of a byte string, lowercase hex.
std::string sha256_hex(const std::string& bytes);

} // namespace harness
