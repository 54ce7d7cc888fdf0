#include "metrics/reference_sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace harness::metrics {

namespace {

constexpr std::size_t k_n = 624;
constexpr std::size_t k_m = 397;

unsigned bit_length(std::uint32_t n) {
    unsigned bits = 0;
    while (n != 0) {
        ++bits;
        n >>= 1;
    }
    return bits;
}

} // namespace

PythonRandom::PythonRandom(std::uint32_t seed) {
    // init_genrand(19650218) then init_by_array({seed}), as CPython's random_seed does.
    m_state[0] = 19650218U;
    for (std::size_t i = 1; i < k_n; ++i) {
        m_state[i] = 1812433253U * (m_state[i - 1] ^ (m_state[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    }
    std::size_t i = 1;
    for (std::size_t k = k_n; k > 0; --k) {
        m_state[i] = (m_state[i] ^ ((m_state[i - 1] ^ (m_state[i - 1] >> 30)) * 1664525U)) + seed;
        ++i;
        if (i >= k_n) {
            m_state[0] = m_state[k_n - 1];
            i = 1;
        }
    }
    for (std::size_t k = k_n - 1; k > 0; --k) {
        m_state[i] = (m_state[i] ^ ((m_state[i - 1] ^ (m_state[i - 1] >> 30)) * 1566083941U)) - static_cast<std::uint32_t>(i);
        ++i;
        if (i >= k_n) {
            m_state[0] = m_state[k_n - 1];
            i = 1;
        }
    }
    m_state[0] = 0x80000000U;
    m_index = k_n;
}

std::uint32_t PythonRandom::next_u32() {
    if (m_index >= k_n) {
        for (std::size_t kk = 0; kk < k_n; ++kk) {
            const std::uint32_t y = (m_state[kk] & 0x80000000U) | (m_state[(kk + 1) % k_n] & 0x7fffffffU);
            m_state[kk] = m_state[(kk + k_m) % k_n] ^ (y >> 1) ^ ((y & 1U) != 0 ? 0x9908b0dfU : 0U);
        }
        m_index = 0;
    }
    std::uint32_t y = m_state[m_index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

std::uint32_t PythonRandom::getrandbits(unsigned k) { return next_u32() >> (32 - k); }

std::uint32_t PythonRandom::randbelow(std::uint32_t n) {
    const unsigned k = bit_length(n);
    std::uint32_t r = getrandbits(k);
    while (r >= n) {
        r = getrandbits(k);
    }
    return r;
}

std::vector<std::size_t> PythonRandom::sample(std::size_t n, std::size_t k) {
    std::vector<std::size_t> result;
    std::size_t setsize = 21;
    if (k > 5) {
        setsize += static_cast<std::size_t>(std::pow(4.0, std::ceil(std::log(static_cast<double>(k * 3)) / std::log(4.0))));
    }
    if (n <= setsize) {
        std::vector<std::size_t> pool(n);
        std::iota(pool.begin(), pool.end(), std::size_t{0});
        for (std::size_t i = 0; i < k; ++i) {
            const std::size_t j = randbelow(static_cast<std::uint32_t>(n - i));
            result.push_back(pool[j]);
            pool[j] = pool[n - i - 1];
        }
        return result;
    }
    std::set<std::size_t> selected;
    for (std::size_t i = 0; i < k; ++i) {
        std::size_t j = randbelow(static_cast<std::uint32_t>(n));
        while (selected.count(j) > 0) {
            j = randbelow(static_cast<std::uint32_t>(n));
        }
        selected.insert(j);
        result.push_back(j);
    }
    return result;
}

std::vector<std::size_t> reference_file_sample(std::size_t files, std::size_t max_files) {
    std::vector<std::size_t> chosen;
    if (files <= max_files) {
        chosen.resize(files);
        std::iota(chosen.begin(), chosen.end(), std::size_t{0});
        return chosen;
    }
    PythonRandom rng(42);
    chosen = rng.sample(files, max_files);
    std::sort(chosen.begin(), chosen.end());
    return chosen;
}

} // namespace harness::metrics
