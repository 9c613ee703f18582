/* Internal: a fast 64-bit non-cryptographic hash of bytes, for content ids
 * (a model's bytes in the plan cache key) and file checksums (detecting a
 * torn or corrupted cache file). Not for anything an attacker chooses to
 * collide: a collision there only costs a wrong cache entry, which the cache
 * validates before use. */
#ifndef PF_CORE_HASH_H
#define PF_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Hash of n bytes at data (any alignment), seeded. Same result on every
 * little-endian machine; ~8 GB/s on one core. */
uint64_t pf_hash64(const void *data, size_t n, uint64_t seed);

#endif
