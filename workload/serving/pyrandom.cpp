// CPython's Mersenne Twister (Modules/_randommodule.c: init_genrand, init_by_array, genrand_uint32) and the
// Lib/random.py methods built on it. Constants are MT19937's (Matsumoto & Nishimura 1998).
#include "workload/serving/pyrandom.h"

#include <bit>

namespace kvio::serving {

namespace {
constexpr int N = 624, M = 397;
constexpr uint32_t MATRIX_A = 0x9908b0dfu, UPPER_MASK = 0x80000000u, LOWER_MASK = 0x7fffffffu;
}  // namespace

void PyRandom::init_genrand(uint32_t s) {
    mt_[0] = s;
    for (int i = 1; i < N; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + uint32_t(i);
    mti_ = N;
}

void PyRandom::init_by_array(const std::vector<uint32_t>& key) {
    init_genrand(19650218u);
    int i = 1;
    size_t j = 0;
    const size_t len = key.size();
    for (size_t k = (N > len ? N : len); k; --k) {
        mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
        ++i;
        ++j;
        if (i >= N) {
            mt_[0] = mt_[N - 1];
            i = 1;
        }
        if (j >= len) j = 0;
    }
    for (int k = N - 1; k; --k) {
        mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
        ++i;
        if (i >= N) {
            mt_[0] = mt_[N - 1];
            i = 1;
        }
    }
    mt_[0] = 0x80000000u;  // MSB is 1, assuring a non-zero initial array
}

void PyRandom::seed_int(int64_t n) {
    // random.seed(int) uses abs(n); its 32-bit words, least significant first; 0 -> [0].
    uint64_t a = n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
    std::vector<uint32_t> key;
    do {
        key.push_back(uint32_t(a & 0xffffffffu));
        a >>= 32;
    } while (a);
    init_by_array(key);
}

uint32_t PyRandom::next_u32() {
    static constexpr uint32_t mag01[2] = {0u, MATRIX_A};
    if (mti_ >= N) {
        int kk = 0;
        for (; kk < N - M; ++kk) {
            uint32_t y = (mt_[kk] & UPPER_MASK) | (mt_[kk + 1] & LOWER_MASK);
            mt_[kk] = mt_[kk + M] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < N - 1; ++kk) {
            uint32_t y = (mt_[kk] & UPPER_MASK) | (mt_[kk + 1] & LOWER_MASK);
            mt_[kk] = mt_[kk + (M - N)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        uint32_t y = (mt_[N - 1] & UPPER_MASK) | (mt_[0] & LOWER_MASK);
        mt_[N - 1] = mt_[M - 1] ^ (y >> 1) ^ mag01[y & 1u];
        mti_ = 0;
    }
    uint32_t y = mt_[mti_++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

double PyRandom::random() {
    uint32_t a = next_u32() >> 5, b = next_u32() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

uint64_t PyRandom::getrandbits(int k) {
    if (k <= 0) return 0;
    if (k <= 32) return next_u32() >> (32 - k);
    // _random_Random_getrandbits_impl: 32-bit words, least significant first; the last word keeps its top bits.
    uint64_t lo = next_u32();
    uint64_t hi = next_u32() >> (64 - (k > 64 ? 64 : k));
    return lo | (hi << 32);
}

uint64_t PyRandom::randbelow(uint64_t n) {
    if (n == 0) return 0;
    const int k = std::bit_width(n);
    uint64_t r = getrandbits(k);
    while (r >= n) r = getrandbits(k);
    return r;
}

int64_t PyRandom::randint(int64_t a, int64_t b) { return a + int64_t(randbelow(uint64_t(b - a) + 1)); }

double PyRandom::uniform(double a, double b) { return a + (b - a) * random(); }

}  // namespace kvio::serving
