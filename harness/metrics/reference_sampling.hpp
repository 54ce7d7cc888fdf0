#pragma once
// The CCL-Bench tools read at most 16 rank files of a directory: beyond that they take
// random.Random(42).sample(files, 16). Reproducing their numbers means drawing the same sample,
// so this is CPython's Mersenne Twister and its sample(), step for step.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace harness::metrics {

/// CPython's random.Random(seed) for a non-negative seed below 2^32: MT19937 seeded by
/// init_by_array({seed}).
class PythonRandom {
public:
    explicit PythonRandom(std::uint32_t seed);
    std::uint32_t next_u32();
    /// random.getrandbits(k) for 0 < k <= 32.
    std::uint32_t getrandbits(unsigned k);
    /// random._randbelow(n) for 0 < n < 2^32: rejection sampling on bit_length(n) bits.
    std::uint32_t randbelow(std::uint32_t n);
    /// Indices of random.sample(range(n), k) in draw order.
    std::vector<std::size_t> sample(std::size_t n, std::size_t k);

private:
    std::uint32_t m_state[624];
    std::size_t m_index = 624;
};

/// The indices (into the sorted file list) json_sampling.select_json_files keeps, sorted.
std::vector<std::size_t> reference_file_sample(std::size_t files, std::size_t max_files = 16);

} // namespace harness::metrics
