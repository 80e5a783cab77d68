// CPython's `random` module (Lib/random.py, Modules/_randommodule.c), bit for bit: MT19937 seeded by
// init_by_array of the seed's 32-bit words, random(), getrandbits(), randbelow-based randint/choice/shuffle,
// uniform. So `--seed 42` draws exactly the benchmark's user table (docs/mlperf-benchmark.md, "Users and the request
// stream", "Comparing with the Python benchmark").
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvio::serving {

class PyRandom {
public:
    /// random.seed(n) for an int n: init_by_array of |n|'s 32-bit words, least significant first ([0] for 0).
    explicit PyRandom(int64_t seed = 0) { seed_int(seed); }
    void seed_int(int64_t n);
    /// genrand_uint32(): the next raw 32-bit output.
    uint32_t next_u32();
    /// random(): ((a >> 5) * 67108864 + (b >> 6)) / 2^53, in [0, 1).
    double random();
    /// getrandbits(k), 0 <= k <= 64: k <= 32 → next_u32() >> (32 - k); larger k: 32-bit words, least significant first.
    uint64_t getrandbits(int k);
    /// _randbelow(n), n >= 1: k = bit_length(n); draw getrandbits(k) until < n.
    uint64_t randbelow(uint64_t n);
    /// randint(a, b), inclusive: a + randbelow(b - a + 1).
    int64_t randint(int64_t a, int64_t b);
    /// uniform(a, b): a + (b - a) * random().
    double uniform(double a, double b);
    /// choice(seq) index: randbelow(n).
    size_t choice_index(size_t n) { return size_t(randbelow(n)); }
    /// shuffle(x) in place: for i in reversed(range(1, len)): j = randbelow(i + 1); swap.
    template <class T>
    void shuffle(std::vector<T>& v) {
        for (size_t i = v.size(); i-- > 1;) {
            size_t j = size_t(randbelow(i + 1));
            std::swap(v[i], v[j]);
        }
    }

private:
    void init_genrand(uint32_t s);
    void init_by_array(const std::vector<uint32_t>& key);
    std::array<uint32_t, 624> mt_{};
    int mti_ = 625;
};

}  // namespace kvio::serving
