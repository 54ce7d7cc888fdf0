#pragma once
// Every bound the harness puts on the input it reads: cards and profiles (YAML), traces (JSON,
// gzip) and bundles (tar.zst). One table owns them, docs/limits.md documents them, and the
// ones a real user could outgrow can be raised through an environment variable, which every
// error names. Nothing here knows what a card or a bundle is.
#include <cstdint>
#include <string>
#include <string_view>

namespace harness {

enum class InputLimit {
    card_bytes,            ///< size of one YAML file (card, profile)
    yaml_nodes,            ///< nodes of one YAML document as written
    yaml_expanded_nodes,   ///< nodes once every alias is expanded (a billion-laughs bomb)
    nesting_depth,         ///< nesting of JSON arrays and objects, YAML sequences and mappings (fixed)
    json_value_bytes,      ///< the largest JSON value (one event, one member) read at once
    file_inflated_bytes,   ///< one file, fully uncompressed (through gzip too)
    bundle_inflated_bytes, ///< all files of a bundle, fully uncompressed
    inflate_ratio,         ///< fully uncompressed bytes over the archive's size
    bundle_entries,        ///< entries of one archive
    sqlite_seconds,        ///< wall time one read of an SQLite export (nsys) may take
    sqlite_heap_bytes,     ///< memory SQLite may hold at once, all connections of the process together
};

/// The bound in force: the environment variable's value when it is set (a count, or a size
/// with an optional K, M, G or T binary suffix), else the default. A malformed or zero value
/// is an input error naming the variable. nesting_depth is fixed (no variable).
std::uint64_t input_limit(InputLimit which);

/// The variable that raises `which` ("" for a fixed limit).
std::string_view input_limit_variable(InputLimit which);

/// For an error message: "the limit is 64 GiB; raise it with CCL_HARNESS_MAX_INFLATED=SIZE",
/// or "the limit is 1024" for a fixed one.
std::string input_limit_hint(InputLimit which);

/// `bytes` for people: "1 MiB", "64 GiB", "1536 bytes".
std::string format_size(std::uint64_t bytes);

/// Below this many fully uncompressed bytes the ratio is not checked, so that small, very
/// compressible files (a log of blank lines) are not mistaken for a bomb.
inline constexpr std::uint64_t k_inflate_ratio_floor = std::uint64_t{16} << 20;

} // namespace harness
