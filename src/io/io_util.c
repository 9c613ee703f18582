/* io helpers shared by images and video (see io_impl.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "io_impl.h"

bool pf_io_is_std(const char *path)
{
    return path && strcmp(path, "-") == 0;
}

const char *pf_io_in_name(const char *path)
{
    if (!path) return "<memory>";
    return pf_io_is_std(path) ? "<stdin>" : path;
}

const char *pf_io_out_name(const char *path)
{
    if (!path) return "<memory>";
    return pf_io_is_std(path) ? "<stdout>" : path;
}

bool pf_io_has_ext(const char *path, const char *ext)
{
    if (!path) return false;
    size_t n = strlen(path), e = strlen(ext);
    return n > e && strcasecmp(path + n - e, ext) == 0;
}

static bool parent_missing(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return false;
    size_t n = (size_t)(slash - path);
    char dir[4096];
    if (n >= sizeof dir) return false;
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat st;
    return stat(dir, &st) != 0 || !S_ISDIR(st.st_mode);
}

pf_status pf_io_errno(const char *what, const char *path, int err)
{
    if (err == ENOENT && parent_missing(path))
        return pf_set_error(PF_ERR_IO, "%s: cannot %s: the directory does not exist", path, what);
    return pf_set_error(PF_ERR_IO, "%s: cannot %s: %s", path, what, strerror(err));
}

pf_status pf_io_read_file(const char *path, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    bool std = pf_io_is_std(path);
    const char *name = pf_io_in_name(path);
    FILE *fp = std ? stdin : fopen(path, "rb");
    if (!fp) return pf_io_errno("open", path, errno);
    struct stat st;
    if (!std && fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        return pf_set_error(PF_ERR_IO, "%s: is a directory, not a file", name);
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    pf_status status = PF_OK;
    while (buf) {
        if (n == cap) {
            if (cap >= PF_IO_MAX_FILE) {
                status = pf_set_error(PF_ERR_IO, "%s: larger than %zu bytes", name,
                                      (size_t)PF_IO_MAX_FILE);
                break;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp)) status = pf_io_errno("read", name, errno);
            break;
        }
    }
    if (!buf && status == PF_OK) status = pf_set_error(PF_ERR_NOMEM, "%s: out of host memory", name);
    if (!std) fclose(fp);
    if (status != PF_OK) {
        free(buf);
        return status;
    }
    *data = buf;
    *size = n;
    return PF_OK;
}

bool pf_membuf_append(pf_membuf *m, const void *data, size_t n)
{
    if (m->failed) return false;
    if (n > m->cap - m->size) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap - m->size < n) {
            if (cap > SIZE_MAX / 2) {
                m->failed = true;
                return false;
            }
            cap *= 2;
        }
        uint8_t *nd = realloc(m->data, cap);
        if (!nd) {
            m->failed = true;
            return false;
        }
        m->data = nd;
        m->cap = cap;
    }
    memcpy(m->data + m->size, data, n);
    m->size += n;
    return true;
}

static void free_block(void *opaque, void *data, size_t size)
{
    (void)opaque;
    (void)size;
    free(data);
}

pf_status pf_membuf_to_buffer(pf_membuf *m, pf_buffer **out)
{
    *out = NULL;
    if (m->failed) {
        pf_membuf_free(m);
        return pf_set_error(PF_ERR_NOMEM, "pf_image_encode: out of host memory");
    }
    pf_status st = pf_buffer_wrap(m->data, m->size, PF_MEM_HOST, NULL, free_block, NULL, out);
    if (st != PF_OK) {
        pf_membuf_free(m);
        return st;
    }
    memset(m, 0, sizeof *m);
    return PF_OK;
}

void pf_membuf_free(pf_membuf *m)
{
    free(m->data);
    memset(m, 0, sizeof *m);
}

bool pf_io_host_frame(const pf_frame *f)
{
    return f->buf[0] ? pf_buffer_domain(f->buf[0]) != PF_MEM_DEVICE : true;
}

pf_status pf_io_check_image_frame(const char *fn, const char *name, const pf_frame *f)
{
    if (!f) return pf_set_error(PF_ERR_INVALID, "%s: %s: frame is NULL", fn, name);
    if (f->format != PF_PIXFMT_RGB24 && f->format != PF_PIXFMT_BGR24 &&
        f->format != PF_PIXFMT_RGBA && f->format != PF_PIXFMT_GRAY8)
        return pf_set_error(PF_ERR_INVALID,
                            "%s: %s: pixel format %s is not an image format "
                            "(rgb24, bgr24, rgba, gray8)",
                            fn, name, pf_pixfmt_name(f->format));
    if (f->width <= 0 || f->height <= 0 || !f->data[0])
        return pf_set_error(PF_ERR_INVALID, "%s: %s: empty frame (%dx%d)", fn, name, f->width,
                            f->height);
    if (!pf_io_host_frame(f))
        return pf_set_error(PF_ERR_INVALID,
                            "%s: %s: the frame is in device memory; copy it to the host first",
                            fn, name);
    size_t row = 0, rows = 0;
    pf_pixfmt_plane_size(f->format, f->width, f->height, 0, &row, &rows);
    if (f->stride[0] < row)
        return pf_set_error(PF_ERR_INVALID, "%s: %s: stride %zu is below the row size %zu", fn,
                            name, f->stride[0], row);
    return PF_OK;
}
