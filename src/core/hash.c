/* pf_hash64: four independent 64-bit lanes over 32-byte blocks (so the
 * multiplies overlap), each lane a multiply-rotate-multiply step; then the
 * lanes, the length and the tail are folded and the result avalanched with
 * a xorshift-multiply finaliser. Unaligned words are read with memcpy. */
#include "hash.h"

#include <string.h>

#define K1 0x9e3779b185ebca87ull
#define K2 0xc2b2ae3d27d4eb4full
#define K3 0x165667b19e3779f9ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint64_t lane(uint64_t acc, uint64_t w) { return rotl(acc + w * K2, 31) * K1; }

static inline uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= K2;
    h ^= h >> 29;
    h *= K3;
    h ^= h >> 32;
    return h;
}

uint64_t pf_hash64(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t a = seed + K1 + K2, b = seed + K2, c = seed, d = seed - K1;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = lane(a, word(p + i));
        b = lane(b, word(p + i + 8));
        c = lane(c, word(p + i + 16));
        d = lane(d, word(p + i + 24));
    }
    uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + (uint64_t)n * K3;
    for (; i + 8 <= n; i += 8) h = rotl(h ^ lane(0, word(p + i)), 27) * K1 + K3;
    for (; i < n; i++) h = rotl(h ^ (p[i] * K3), 11) * K1;
    return avalanche(h);
}
