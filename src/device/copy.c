/* Stream-ordered copies: argument checks, then the backend. */
#include "../core/error.h"
#include "backend.h"

pf_status pf_memcpy_async(pf_stream *s, void *dst, const void *src, size_t n)
{
    PF_CHECK_ARG(s, "pf_memcpy_async", "stream is NULL");
    if (n == 0) return PF_OK;
    PF_CHECK_ARG(dst && src, "pf_memcpy_async", "dst or src is NULL");
    return s->be->memcpy_async(s->native, dst, src, n);
}

pf_status pf_memcpy2d_async(pf_stream *s, void *dst, size_t dst_pitch, const void *src,
                            size_t src_pitch, size_t width_bytes, size_t rows)
{
    PF_CHECK_ARG(s, "pf_memcpy2d_async", "stream is NULL");
    if (width_bytes == 0 || rows == 0) return PF_OK;
    PF_CHECK_ARG(dst && src, "pf_memcpy2d_async", "dst or src is NULL");
    if (dst_pitch < width_bytes || src_pitch < width_bytes)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_memcpy2d_async: row of %zu bytes wider than a pitch (dst %zu, src %zu)",
                            width_bytes, dst_pitch, src_pitch);
    return s->be->memcpy2d_async(s->native, dst, dst_pitch, src, src_pitch, width_bytes, rows);
}

pf_status pf_memset_async(pf_stream *s, void *dst, int value, size_t n)
{
    PF_CHECK_ARG(s, "pf_memset_async", "stream is NULL");
    if (n == 0) return PF_OK;
    PF_CHECK_ARG(dst, "pf_memset_async", "dst is NULL");
    return s->be->memset_async(s->native, dst, value, n);
}

/* Host and pinned memory is reachable from every stream; device memory
 * from streams of its own device, and of a device it has peer access with
 * (pf_device_peer_access). */
static pf_status check_reachable(const pf_stream *s, const pf_buffer *b, const char *which)
{
    if (pf_buffer_domain(b) != PF_MEM_DEVICE) return PF_OK;
    pf_device *owner = pf_buffer_device(b);
    if (owner == s->dev || owner->props.type == PF_DEVICE_CPU) return PF_OK;
    if (pf_device_peer_access(owner, s->dev)) return PF_OK;
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "pf_buffer_copy_async: %s buffer is device memory of %s, "
                        "not reachable from a stream of %s",
                        which, owner->spec, s->dev->spec);
}

pf_status pf_buffer_copy_async(pf_stream *s, pf_buffer *dst, size_t dst_offset,
                               const pf_buffer *src, size_t src_offset, size_t n)
{
    PF_CHECK_ARG(s && dst && src, "pf_buffer_copy_async", "stream, dst or src is NULL");
    size_t dsz = pf_buffer_size(dst), ssz = pf_buffer_size(src);
    if (dst_offset > dsz || n > dsz - dst_offset)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_buffer_copy_async: dst range [%zu, %zu + %zu) outside %zu bytes",
                            dst_offset, dst_offset, n, dsz);
    if (src_offset > ssz || n > ssz - src_offset)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_buffer_copy_async: src range [%zu, %zu + %zu) outside %zu bytes",
                            src_offset, src_offset, n, ssz);
    pf_status st = check_reachable(s, dst, "dst");
    if (st == PF_OK) st = check_reachable(s, src, "src");
    if (st != PF_OK || n == 0) return st;
    return s->be->memcpy_async(s->native, (char *)pf_buffer_data(dst) + dst_offset,
                               (const char *)pf_buffer_data(src) + src_offset, n);
}
