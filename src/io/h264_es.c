/* Annex B elementary streams split into access units (see h264_es.h).
 *
 * The reader keeps one growable buffer: it reads until pf_es_next_au finds
 * the end of the unit at the front (or the file ends), hands that unit out
 * in place and drops it on the next call. The buffer grows only for a unit
 * larger than any before, so a steady stream allocates nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "h264_es.h"
#include "io_impl.h"

#define READ_CHUNK ((size_t)1 << 20)

const char *pf_es_codec_name(pf_es_codec c)
{
    switch (c) {
    case PF_ES_H264: return "h264";
    case PF_ES_HEVC: return "hevc";
    default: return "unknown";
    }
}

pf_es_codec pf_es_codec_from_path(const char *path)
{
    if (!path) return PF_ES_UNKNOWN;
    if (pf_io_has_ext(path, ".h264") || pf_io_has_ext(path, ".264") ||
        pf_io_has_ext(path, ".avc"))
        return PF_ES_H264;
    if (pf_io_has_ext(path, ".h265") || pf_io_has_ext(path, ".hevc") ||
        pf_io_has_ext(path, ".265"))
        return PF_ES_HEVC;
    return PF_ES_UNKNOWN;
}

/* Offset of the next 00 00 01 at or after `from`, or `size`. */
static size_t find_start(const uint8_t *b, size_t size, size_t from)
{
    for (size_t i = from; i + 3 <= size; i++) {
        if (b[i + 2] > 1) {
            i += 2; /* no start code can end at i+2: skip ahead */
            continue;
        }
        if (b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1) return i;
    }
    return size;
}

pf_es_codec pf_es_probe(const uint8_t *data, size_t size)
{
    if (!data) return PF_ES_UNKNOWN;
    size_t sc = find_start(data, size, 0);
    if (sc + 5 > size) return PF_ES_UNKNOWN;
    uint8_t b0 = data[sc + 3], b1 = data[sc + 4];
    if (b0 & 0x80) return PF_ES_UNKNOWN; /* forbidden_zero_bit */
    /* HEVC: 2-byte header with nuh_layer_id 0 and temporal_id_plus1 1 for a
     * VPS (32), SPS, PPS, AUD (35) or prefix SEI (39). Read as H.264 those
     * bytes are nal_ref_idc 2 with types 0, 2, 4, 6, 14: not how an H.264
     * stream begins (its first NAL is an AUD, SPS or SEI, or an IDR slice). */
    int ht = (b0 >> 1) & 0x3f;
    if (b1 == 0x01 && (b0 & 1) == 0 && (ht == 32 || ht == 33 || ht == 34 || ht == 35 || ht == 39))
        return PF_ES_HEVC;
    int t = b0 & 0x1f;
    if (t == 9 || t == 7 || t == 5 || (t == 6 && (b0 & 0x60) == 0) || t == 1) return PF_ES_H264;
    return PF_ES_UNKNOWN;
}

typedef enum { NAL_OTHER, NAL_VCL, NAL_VCL_FIRST, NAL_AU_START } nal_class;

/* `h` points at the NAL header; `n` bytes are there (the header plus the
 * first slice byte are enough). */
static nal_class classify(pf_es_codec codec, const uint8_t *h, size_t n)
{
    if (codec == PF_ES_H264) {
        int t = h[0] & 0x1f;
        if (t >= 1 && t <= 5) {
            /* first_mb_in_slice is ue(v): its first bit is 1 exactly when it is 0 */
            return n >= 2 && (h[1] & 0x80) ? NAL_VCL_FIRST : NAL_VCL;
        }
        if (t == 6 || t == 7 || t == 8 || t == 9 || (t >= 14 && t <= 18)) return NAL_AU_START;
        return NAL_OTHER; /* end of sequence/stream, filler, SPS extension, ... */
    }
    int t = (h[0] >> 1) & 0x3f;
    if (t <= 31) return n >= 3 && (h[2] & 0x80) ? NAL_VCL_FIRST : NAL_VCL;
    if (t == 32 || t == 33 || t == 34 || t == 35 || t == 39 || (t >= 41 && t <= 44) ||
        (t >= 48 && t <= 55))
        return NAL_AU_START;
    return NAL_OTHER; /* EOS, EOB, filler, suffix SEI belong to the current unit */
}

pf_status pf_es_next_au(pf_es_codec codec, const uint8_t *buf, size_t size, bool eof,
                        size_t *au_len)
{
    PF_CHECK_ARG(au_len && (buf || size == 0), "pf_es_next_au", "NULL argument");
    PF_CHECK_ARG(codec == PF_ES_H264 || codec == PF_ES_HEVC, "pf_es_next_au",
                 "codec must be h264 or hevc");
    *au_len = 0;
    if (size == 0) return PF_EOF;
    const size_t need = codec == PF_ES_H264 ? 2 : 3; /* header + first slice byte */
    bool seen_vcl = false;
    size_t sc = find_start(buf, size, 0);
    while (sc < size) {
        size_t h = sc + 3;
        if (h + need > size && !eof) return PF_AGAIN; /* cannot classify yet */
        nal_class c = h < size ? classify(codec, buf + h, size - h < need ? size - h : need)
                               : NAL_OTHER;
        if (seen_vcl && (c == NAL_AU_START || c == NAL_VCL_FIRST)) {
            /* a zero_byte before the start code belongs to the next unit */
            *au_len = sc > 0 && buf[sc - 1] == 0 ? sc - 1 : sc;
            return PF_OK;
        }
        if (c == NAL_VCL || c == NAL_VCL_FIRST) seen_vcl = true;
        sc = find_start(buf, size, h);
    }
    if (!eof) return PF_AGAIN;
    *au_len = size;
    return PF_OK;
}

struct pf_es_reader {
    FILE *fp;
    bool own_fp;
    bool eof;             /* the file has no more bytes */
    char *name;
    pf_es_codec codec;
    uint8_t *buf;
    size_t cap, start, end; /* pending bytes are buf[start, end) */
    size_t handed;        /* bytes of the unit handed out last (dropped next call) */
    int64_t count;
};

/* Reads up to `want` more bytes (growing the buffer when full). */
static pf_status fill(pf_es_reader *r, size_t want)
{
    if (r->start > 0 && r->start == r->end) r->start = r->end = 0;
    if (r->end + want > r->cap && r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end + want > r->cap) {
        size_t cap = r->cap ? r->cap : READ_CHUNK;
        while (cap < r->end + want) cap *= 2;
        if (cap > PF_ES_MAX_AU + READ_CHUNK)
            return pf_set_error(PF_ERR_FORMAT, "%s: access unit %lld is larger than %zu MiB",
                                r->name, (long long)r->count, PF_ES_MAX_AU >> 20);
        uint8_t *nb = realloc(r->buf, cap);
        if (!nb) return pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", r->name);
        r->buf = nb;
        r->cap = cap;
    }
    size_t got = fread(r->buf + r->end, 1, want, r->fp);
    r->end += got;
    if (got < want) {
        if (ferror(r->fp)) return pf_io_errno("read", r->name, errno);
        r->eof = true;
    }
    return PF_OK;
}

pf_status pf_es_reader_open(const char *path, pf_es_codec codec, pf_es_reader **out)
{
    PF_CHECK_ARG(out, "pf_es_reader_open", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(path && path[0], "pf_es_reader_open", "path is NULL or empty");
    pf_es_reader *r = calloc(1, sizeof *r);
    if (!r) return pf_set_error(PF_ERR_NOMEM, "pf_es_reader_open: out of host memory");
    r->name = strdup(pf_io_in_name(path));
    pf_status st = r->name ? PF_OK : pf_set_error(PF_ERR_NOMEM, "out of host memory");
    if (st == PF_OK) {
        if (pf_io_is_std(path)) {
            r->fp = stdin;
        } else {
            r->fp = fopen(path, "rb");
            if (!r->fp) st = pf_io_errno("open", path, errno);
            r->own_fp = true;
        }
    }
    if (st == PF_OK) st = fill(r, READ_CHUNK);
    if (st == PF_OK) {
        if (codec == PF_ES_UNKNOWN) codec = pf_es_codec_from_path(path);
        if (codec == PF_ES_UNKNOWN) codec = pf_es_probe(r->buf, r->end);
        if (codec == PF_ES_UNKNOWN)
            st = pf_set_error(PF_ERR_FORMAT,
                              "%s: not an H.264/HEVC elementary stream (no known NAL header "
                              "after the first start code; name it .h264 or .hevc to force)",
                              r->name);
        r->codec = codec;
    }
    if (st != PF_OK) {
        pf_es_reader_close(&r);
        return st;
    }
    *out = r;
    return PF_OK;
}

void pf_es_reader_close(pf_es_reader **pr)
{
    if (!pr || !*pr) return;
    pf_es_reader *r = *pr;
    *pr = NULL;
    if (r->own_fp && r->fp) fclose(r->fp);
    free(r->buf);
    free(r->name);
    free(r);
}

pf_es_codec pf_es_reader_codec(const pf_es_reader *r) { return r ? r->codec : PF_ES_UNKNOWN; }

int64_t pf_es_reader_count(const pf_es_reader *r) { return r ? r->count : 0; }

pf_status pf_es_reader_next(pf_es_reader *r, const uint8_t **data, size_t *size)
{
    PF_CHECK_ARG(r && data && size, "pf_es_reader_next", "NULL argument");
    *data = NULL;
    *size = 0;
    r->start += r->handed;
    r->handed = 0;
    for (;;) {
        size_t len = 0;
        pf_status st = pf_es_next_au(r->codec, r->buf + r->start, r->end - r->start, r->eof, &len);
        if (st == PF_EOF) return PF_EOF;
        if (st == PF_OK) {
            if (len > PF_ES_MAX_AU)
                return pf_set_error(PF_ERR_FORMAT, "%s: access unit %lld is larger than %zu MiB",
                                    r->name, (long long)r->count, PF_ES_MAX_AU >> 20);
            *data = r->buf + r->start;
            *size = len;
            r->handed = len;
            r->count++;
            return PF_OK;
        }
        if (st != PF_AGAIN) return st;
        /* read at least as much as is pending, so rescanning stays linear */
        size_t pending = r->end - r->start;
        st = fill(r, pending > READ_CHUNK ? pending : READ_CHUNK);
        if (st != PF_OK) return st;
    }
}
