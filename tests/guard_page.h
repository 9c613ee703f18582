/* A frame that ends at an inaccessible page, for tests of SIMD kernels
 * that must never read past their source (test_resize.c, test_reproject.c).
 * The includer defines _DEFAULT_SOURCE (mmap flags, sysconf). */
#ifndef PF_GUARD_PAGE_H
#define PF_GUARD_PAGE_H

#include <sys/mman.h>
#include <unistd.h>

#include "pf_test.h"

/* A host frame whose last byte is the last before an inaccessible page
 * (rows packed, no padding): a SIMD kernel reading past the image faults.
 * *map / *map_len: the mapping to munmap after the frame is released. */
static inline pf_status guarded_frame(pf_frame *f, pf_pixfmt fmt, int w, int h, void **map,
                                      size_t *map_len)
{
    const size_t bpp = fmt == PF_PIXFMT_RGBA ? 4 : (fmt == PF_PIXFMT_GRAY8 ? 1 : 3);
    const size_t size = bpp * (size_t)w * (size_t)h;
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (size + pg - 1) / pg * pg;
    uint8_t *m = mmap(NULL, body + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return PF_ERR_NOMEM;
    if (mprotect(m + body, pg, PROT_NONE) != 0) {
        munmap(m, body + pg);
        return PF_ERR_NOMEM;
    }
    *map = m;
    *map_len = body + pg;
    uint8_t *data = m + body - size;
    for (size_t i = 0; i < size; i++) data[i] = (uint8_t)(pf_test_rand() >> 7);
    pf_buffer *b = NULL;
    pf_status st = pf_buffer_wrap(data, size, PF_MEM_HOST, NULL, NULL, NULL, &b);
    if (st != PF_OK) return st;
    size_t strides[PF_FRAME_MAX_PLANES] = {bpp * (size_t)w, 0, 0};
    st = pf_frame_wrap(f, fmt, w, h, b, 0, strides);
    pf_buffer_unref(&b);
    return st;
}

#endif
