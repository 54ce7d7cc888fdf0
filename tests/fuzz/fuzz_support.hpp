#pragma once
// What the fuzz targets share: a scratch directory of their own, emptied between inputs, the
// compressors that let a mutator working on plain bytes reach the decoders behind them, and the
// one rule for what counts as a finding besides a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

namespace harness::fuzz {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR (else /tmp), made on first use, removed at normal exit.
const fs::path& scratch_dir();

/// Removes everything under scratch_dir(): each input starts from an empty directory.
void wipe_scratch();

/// Writes `bytes` to scratch_dir()/name and returns that path.
fs::path write_scratch(const std::string& name, std::string_view bytes);

/// `bytes` as one gzip member (zlib, default level).
std::string gzip(std::string_view bytes);

/// `bytes` as one zstd frame (level 1: the frame is the wrapper, not the point).
std::string zstd_frame(std::string_view bytes);

bool has_gzip_magic(std::string_view bytes);
bool has_zstd_magic(std::string_view bytes);

/// Prints "<target>: <what>" and aborts, so libFuzzer records the input as a crash.
[[noreturn]] void finding(const char* target, const std::string& what);

/// Runs `check`. A HarnessError is the library refusing bad input, as it should; any other
/// exception reaching the caller is a finding (main would print its raw text and exit 1).
template <class Check>
void refuse_only_with_harness_errors(const char* target, Check&& check);

std::string_view as_text(const std::uint8_t* data, std::size_t size);

} // namespace harness::fuzz

#include "util/error.hpp"

template <class Check>
void harness::fuzz::refuse_only_with_harness_errors(const char* target, Check&& check) {
    try {
        check();
    } catch (const HarnessError&) {
        // Expected: bad input refused with a message and an exit code.
    } catch (const std::exception& e) {
        finding(target, std::string("an exception other than HarnessError escaped: ") + e.what());
    }
}
