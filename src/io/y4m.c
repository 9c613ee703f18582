/* YUV4MPEG2 and raw planes (see y4m.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "../core/error.h"
#include "y4m.h"

/* Reads one header line (without the '\n') into buf, after the `n` bytes
 * of it already there (a sniffed prefix). first_eof: PF_EOF when the stream
 * ends before its first byte. *cut: the stream ended inside the line. */
static pf_status read_line(FILE *fp, const char *name, const char *what, char *buf, size_t size,
                           size_t n, bool first_eof, bool *cut)
{
    for (;;) {
        int c = getc(fp);
        if (c == EOF) {
            if (ferror(fp))
                return pf_set_error(PF_ERR_IO, "%s: read error in %s: %s", name, what,
                                    strerror(errno));
            if (n == 0 && first_eof) return PF_EOF;
            if (cut) *cut = true;
            return pf_set_error(PF_ERR_FORMAT, "%s: truncated %s (no newline after %zu bytes)",
                                name, what, n);
        }
        if (c == '\n') break;
        if (n + 1 >= size)
            return pf_set_error(PF_ERR_FORMAT, "%s: %s longer than %zu bytes", name, what,
                                size - 1);
        if (c == '\0' || c == '\r')
            return pf_set_error(PF_ERR_FORMAT, "%s: %s has a %s byte at offset %zu", name, what,
                                c ? "carriage-return" : "NUL", n);
        buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return PF_OK;
}

/* Unsigned decimal of at most 9 digits filling [s, end). */
static bool parse_uint(const char *s, const char *end, int *out)
{
    if (s == end || end - s > 9) return false;
    int v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9') return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

static bool parse_ratio(const char *s, const char *end, pf_rational *out)
{
    const char *colon = memchr(s, ':', (size_t)(end - s));
    int n, d;
    if (!colon || !parse_uint(s, colon, &n) || !parse_uint(colon + 1, end, &d)) return false;
    out->num = n;
    out->den = d;
    return true;
}

static pf_status parse_chroma(const char *name, const char *s, size_t len, pf_y4m_header *h)
{
    static const struct {
        const char *tag;
        pf_y4m_chroma c;
    } known[] = {{"420jpeg", PF_Y4M_420}, {"420", PF_Y4M_420},   {"420mpeg2", PF_Y4M_420},
                 {"420paldv", PF_Y4M_420}, {"422", PF_Y4M_422}, {"444", PF_Y4M_444},
                 {"mono", PF_Y4M_MONO}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strlen(known[i].tag) == len && memcmp(known[i].tag, s, len) == 0) {
            h->chroma = known[i].c;
            memcpy(h->chroma_tag, s, len);
            h->chroma_tag[len] = '\0';
            return PF_OK;
        }
    /* Known to exist but not handled: bit depths above 8, alpha, 4:1:1. */
    static const char *const later[] = {"420p", "422p", "444p", "mono1", "mono9", "444alpha",
                                        "411"};
    int shown = (int)(len > 20 ? 20 : len);
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        size_t n = strlen(later[i]);
        if (len >= n && memcmp(s, later[i], n) == 0)
            return pf_set_error(PF_ERR_UNSUPPORTED,
                                "%s: Y4M colour space C%.*s is not supported (8-bit 420, 422, "
                                "444 and mono only)",
                                name, shown, s);
    }
    return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: unknown colour space 'C%.*s'", name, shown,
                        s);
}

pf_status pf_y4m_read_header(FILE *fp, const char *name, pf_y4m_header *h)
{
    return pf_y4m_read_header_after(fp, name, NULL, 0, h);
}

pf_status pf_y4m_read_header_after(FILE *fp, const char *name, const uint8_t *head, size_t n,
                                   pf_y4m_header *h)
{
    memset(h, 0, sizeof *h);
    char line[PF_Y4M_MAX_LINE];
    /* A newline in the head ends the line there (what follows it is not
     * header: the reader sniffs only the signature's length). */
    const uint8_t *nl = n ? memchr(head, '\n', n) : NULL;
    size_t keep = nl ? (size_t)(nl - head) : n;
    if (keep >= sizeof line || (nl && (size_t)(nl - head) + 1 != n) || memchr(head, '\0', keep))
        return pf_set_error(PF_ERR_FORMAT, "%s: not a Y4M stream (no YUV4MPEG2 signature)", name);
    if (keep) memcpy(line, head, keep);
    line[keep] = '\0';
    pf_status st = nl ? PF_OK
                      : read_line(fp, name, "Y4M stream header", line, sizeof line, keep, false,
                                  NULL);
    if (st != PF_OK) return st;
    static const char magic[] = "YUV4MPEG2";
    size_t ml = sizeof magic - 1;
    if (strncmp(line, magic, ml) != 0 || (line[ml] != ' ' && line[ml] != '\0'))
        return pf_set_error(PF_ERR_FORMAT, "%s: not a Y4M stream (no YUV4MPEG2 signature)", name);
    bool seen[128] = {false};
    const char *p = line + ml;
    while (*p) {
        p++; /* the space */
        const char *end = strchr(p, ' ');
        if (!end) end = p + strlen(p);
        if (end == p)
            return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: empty tag (two spaces, or a "
                                               "trailing space)", name);
        unsigned char tag = (unsigned char)*p;
        const char *v = p + 1;
        int shown = (int)(end - p > 40 ? 40 : end - p);
        if (tag != 'X' && tag < 128) {
            if (seen[tag])
                return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: tag '%c' given twice", name,
                                    tag);
            seen[tag] = true;
        }
        bool ok = true;
        switch (tag) {
        case 'W': ok = parse_uint(v, end, &h->width); break;
        case 'H': ok = parse_uint(v, end, &h->height); break;
        case 'F':
            ok = parse_ratio(v, end, &h->fps) && ((h->fps.num > 0 && h->fps.den > 0) ||
                                                  (h->fps.num == 0 && h->fps.den == 0));
            break;
        case 'A':
            ok = parse_ratio(v, end, &h->aspect) && ((h->aspect.num > 0 && h->aspect.den > 0) ||
                                                     (h->aspect.num == 0 && h->aspect.den == 0));
            break;
        case 'I':
            ok = end - v == 1 && strchr("ptbm?", *v) != NULL;
            if (ok) h->interlace = *v;
            break;
        case 'C':
            st = parse_chroma(name, v, (size_t)(end - v), h);
            if (st != PF_OK) return st;
            break;
        case 'X':
            /* Extensions: XCOLORRANGE (FFmpeg writes it for full-range input)
             * says how to convert; the others (XYSCSS=...) are not needed. */
            if (!strncmp(v, "COLORRANGE=FULL", 15) && end - v == 15) h->range = PF_COLOR_RANGE_FULL;
            if (!strncmp(v, "COLORRANGE=LIMITED", 18) && end - v == 18)
                h->range = PF_COLOR_RANGE_LIMITED;
            break;
        default:
            return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: unknown tag '%.*s'", name, shown,
                                p);
        }
        if (!ok)
            return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: bad value in '%.*s'", name, shown,
                                p);
        p = end;
    }
    if (!seen['W'] || !seen['H'])
        return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: missing %s", name,
                            !seen['W'] ? "width (W)" : "height (H)");
    if (h->width < 1 || h->height < 1 || h->width > PF_FRAME_MAX_DIM ||
        h->height > PF_FRAME_MAX_DIM)
        return pf_set_error(PF_ERR_FORMAT, "%s: Y4M header: size %dx%d is out of range (1..%d)",
                            name, h->width, h->height, PF_FRAME_MAX_DIM);
    if (!seen['C']) strcpy(h->chroma_tag, "420jpeg"); /* the format's default */
    return PF_OK;
}

static size_t chroma_w(const pf_y4m_header *h)
{
    return h->chroma == PF_Y4M_420 || h->chroma == PF_Y4M_422 ? (size_t)(h->width + 1) / 2
                                                              : (size_t)h->width;
}

static size_t chroma_h(const pf_y4m_header *h)
{
    return h->chroma == PF_Y4M_420 ? (size_t)(h->height + 1) / 2 : (size_t)h->height;
}

size_t pf_y4m_payload_size(const pf_y4m_header *h)
{
    size_t y = (size_t)h->width * (size_t)h->height;
    if (h->chroma == PF_Y4M_MONO) return y;
    return y + 2 * chroma_w(h) * chroma_h(h);
}

/* Reads `rows` rows of `row` bytes into dst (stride apart). */
static pf_status read_rows(FILE *fp, const char *name, int64_t index, uint8_t *dst,
                           size_t stride, size_t row, size_t rows, bool *cut)
{
    if (stride == row) {
        size_t n = row * rows;
        if (fread(dst, 1, n, fp) == n) return PF_OK;
    } else {
        size_t r = 0;
        for (; r < rows; r++)
            if (fread(dst + r * stride, 1, row, fp) != row) break;
        if (r == rows) return PF_OK;
    }
    if (ferror(fp))
        return pf_set_error(PF_ERR_IO, "%s: read error in frame %lld: %s", name, (long long)index,
                            strerror(errno));
    if (cut) *cut = true;
    return pf_set_error(PF_ERR_FORMAT, "%s: truncated frame %lld (the stream ends inside it)",
                        name, (long long)index);
}

/* 4:2:2 / 4:4:4 chroma plane (cw x ch, packed) -> 4:2:0 plane, rounded means. */
static void downsample(const pf_y4m_header *h, const uint8_t *src, uint8_t *dst,
                       size_t dst_stride)
{
    size_t cw = chroma_w(h), chh = chroma_h(h);
    size_t ow = (size_t)(h->width + 1) / 2, oh = (size_t)(h->height + 1) / 2;
    bool horiz = h->chroma == PF_Y4M_444;
    for (size_t y = 0; y < oh; y++) {
        const uint8_t *r0 = src + (2 * y) * cw;
        const uint8_t *r1 = 2 * y + 1 < chh ? r0 + cw : r0;
        for (size_t x = 0; x < ow; x++) {
            unsigned sum, n;
            if (horiz) {
                size_t x0 = 2 * x, x1 = 2 * x + 1 < cw ? 2 * x + 1 : 2 * x;
                sum = (unsigned)r0[x0] + r0[x1] + r1[x0] + r1[x1];
                n = 4;
            } else {
                sum = (unsigned)r0[x] + r1[x];
                n = 2;
            }
            dst[y * dst_stride + x] = (uint8_t)((sum + n / 2) / n);
        }
    }
}

pf_status pf_y4m_read_frame(FILE *fp, const char *name, const pf_y4m_header *h, int64_t index,
                            uint8_t *scratch, pf_frame *dst, bool *cut)
{
    if (cut) *cut = false;
    char line[PF_Y4M_MAX_LINE];
    char what[64];
    snprintf(what, sizeof what, "header of frame %lld", (long long)index);
    pf_status st = read_line(fp, name, what, line, sizeof line, 0, true, cut);
    if (st != PF_OK) return st;
    if (strncmp(line, "FRAME", 5) != 0 || (line[5] != ' ' && line[5] != '\0'))
        return pf_set_error(PF_ERR_FORMAT, "%s: frame %lld: expected a FRAME line, found '%.20s'",
                            name, (long long)index, line);
    /* Frame tags (I, X) only describe the frame: checked for shape, ignored. */
    for (const char *p = line + 5; *p;) {
        p++;
        const char *end = strchr(p, ' ');
        if (!end) end = p + strlen(p);
        if (end == p)
            return pf_set_error(PF_ERR_FORMAT, "%s: frame %lld: empty tag in the FRAME line",
                                name, (long long)index);
        p = end;
    }
    size_t w = (size_t)h->width, hh = (size_t)h->height;
    st = read_rows(fp, name, index, dst->data[0], dst->stride[0], w, hh, cut);
    if (st != PF_OK || h->chroma == PF_Y4M_MONO) return st;
    if (h->chroma == PF_Y4M_420) {
        size_t cw = chroma_w(h), chh = chroma_h(h);
        st = read_rows(fp, name, index, dst->data[1], dst->stride[1], cw, chh, cut);
        if (st == PF_OK)
            st = read_rows(fp, name, index, dst->data[2], dst->stride[2], cw, chh, cut);
        return st;
    }
    size_t plane = chroma_w(h) * chroma_h(h);
    st = read_rows(fp, name, index, scratch, plane, plane, 1, cut);
    if (st == PF_OK) st = read_rows(fp, name, index, scratch + plane, plane, plane, 1, cut);
    if (st != PF_OK) return st;
    downsample(h, scratch, dst->data[1], dst->stride[1]);
    downsample(h, scratch + plane, dst->data[2], dst->stride[2]);
    return PF_OK;
}

pf_status pf_y4m_write_header(FILE *fp, const char *name, int width, int height, pf_rational fps,
                              bool mono, pf_rational sar, bool full_range)
{
    if (sar.num <= 0 || sar.den <= 0) sar = (pf_rational){1, 1};
    if (fprintf(fp, "YUV4MPEG2 W%d H%d F%d:%d Ip A%d:%d %s%s\n", width, height, fps.num, fps.den,
                sar.num, sar.den, mono ? "Cmono" : "C420jpeg",
                full_range ? " XCOLORRANGE=FULL" : "") < 0)
        return pf_set_error(PF_ERR_IO, "%s: cannot write: %s", name, strerror(errno));
    return PF_OK;
}

static pf_status write_planes(FILE *fp, const char *name, const pf_frame *f)
{
    for (int i = 0; i < f->num_planes; i++) {
        size_t row = 0, rows = 0;
        pf_status st = pf_pixfmt_plane_size(f->format, f->width, f->height, i, &row, &rows);
        if (st != PF_OK) return st;
        for (size_t r = 0; r < rows; r++)
            if (fwrite(f->data[i] + r * f->stride[i], 1, row, fp) != row)
                return pf_set_error(PF_ERR_IO, "%s: cannot write: %s", name, strerror(errno));
    }
    return PF_OK;
}

pf_status pf_y4m_write_frame(FILE *fp, const char *name, const pf_frame *f)
{
    if (fputs("FRAME\n", fp) == EOF)
        return pf_set_error(PF_ERR_IO, "%s: cannot write: %s", name, strerror(errno));
    return write_planes(fp, name, f);
}

pf_status pf_raw_read_frame(FILE *fp, const char *name, int64_t index, pf_frame *f, bool *cut)
{
    if (cut) *cut = false;
    for (int i = 0; i < f->num_planes; i++) {
        size_t row = 0, rows = 0;
        pf_status st = pf_pixfmt_plane_size(f->format, f->width, f->height, i, &row, &rows);
        if (st != PF_OK) return st;
        if (i == 0) {
            int c = getc(fp);
            if (c == EOF) {
                if (ferror(fp))
                    return pf_set_error(PF_ERR_IO, "%s: read error: %s", name, strerror(errno));
                return PF_EOF;
            }
            ungetc(c, fp);
        }
        st = read_rows(fp, name, index, f->data[i], f->stride[i], row, rows, cut);
        if (st != PF_OK) return st;
    }
    return PF_OK;
}

pf_status pf_raw_write_frame(FILE *fp, const char *name, const pf_frame *f)
{
    return write_planes(fp, name, f);
}
