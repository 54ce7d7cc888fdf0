#include "util/sha256.hpp"

#include "util/error.hpp"
#include "util/fd.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <vector>

namespace harness {

namespace {

constexpr std::size_t k_chunk = std::size_t{1} << 20;

} // namespace

struct Sha256::Context {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256::Sha256() : m_context(std::make_unique<Context>()) {
    if (!m_context->md || EVP_DigestInit_ex(m_context->md.get(), EVP_sha256(), nullptr) != 1) {
        throw HarnessError("sha256: digest failed");
    }
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t size) {
    if (EVP_DigestUpdate(m_context->md.get(), data, size) != 1) {
        throw HarnessError("sha256: digest failed");
    }
}

std::string Sha256::finish() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(m_context->md.get(), digest, &length) != 1) {
        throw HarnessError("sha256: digest failed");
    }
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(std::size_t{2} * length);
    for (unsigned int i = 0; i < length; ++i) {
        hex += k_hex[digest[i] >> 4];
        hex += k_hex[digest[i] & 0xf];
    }
    return hex;
}

std::string sha256_file(const fs::path& path) {
    const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        throw HarnessError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
    }
    Sha256 hash;
    std::vector<char> buffer(k_chunk);
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            throw HarnessError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
        }
        if (n == 0) {
            break;
        }
        hash.update(buffer.data(), static_cast<std::size_t>(n));
    }
    return hash.finish();
}

std::string sha256_hex(const std::string& bytes) {
    Sha256 hash;
    hash.update(bytes.data(), bytes.size());
    return hash.finish();
}

} // namespace harness
