/* NumPy .npy files (format versions 1.0, 2.0 and 3.0) for `pixflow model run`.
 *
 *   npy_array a;
 *   char err[256];
 *   if (!npy_read_file("x.npy", &a, err, sizeof err)) { fprintf(stderr, "%s\n", err); ... }
 *   ... a.dtype, a.ndim, a.shape, a.data (a.nbytes) ...
 *   npy_free(&a);
 *
 * Supported: little-endian (or byte-order-free) f4, f2, i4, i8, u1 and b1
 * arrays in C order, up to NPY_MAX_DIMS dimensions. Anything else is refused
 * with a message saying what and why: fortran_order True, big-endian data,
 * other dtypes (f8, structured, object), more dims.
 *
 * Reading is written for untrusted files: the magic, version, header length
 * and header dictionary are validated (keys 'descr', 'fortran_order' and
 * 'shape' exactly once each, nothing else; Python literal syntax as NumPy
 * writes it, any spacing; the header ends with '\n'), the element count
 * must not overflow and the data that follows the header must be exactly
 * count * itemsize bytes. Nothing is read out of bounds whatever the input.
 * Writing produces version 1.0 (an 8-dim header fits easily), with the
 * header padded so the data starts at a multiple of 64 bytes.
 *
 * Errors are returned as false with a message in `err` (named after the
 * file); no global state, thread-safe. */
#ifndef PF_TOOLS_NPY_H
#define PF_TOOLS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

typedef enum npy_dtype {
    NPY_F4 = 0, /* float32 */
    NPY_F2,     /* float16 */
    NPY_I4,     /* int32 */
    NPY_I8,     /* int64 */
    NPY_U1,     /* uint8 */
    NPY_B1,     /* bool (one byte, 0 or 1) */
    NPY_DTYPE_COUNT
} npy_dtype;

typedef struct npy_array {
    npy_dtype dtype;
    int ndim;                     /* 0 = a scalar */
    int64_t shape[NPY_MAX_DIMS];
    int64_t numel;
    void *data;                   /* numel * itemsize bytes, malloc'd; NULL when empty */
    size_t nbytes;
} npy_array;

/* Bytes per element; its NumPy descr ("<f4", "|u1", ...); "f32"-style name. */
size_t npy_dtype_size(npy_dtype t);
const char *npy_dtype_descr(npy_dtype t);
const char *npy_dtype_name(npy_dtype t);

/* Parses a whole .npy image. `name` names it in messages. On success *out
 * owns a copy of the data (npy_free); on failure *out is zeroed. */
bool npy_read_memory(const void *data, size_t size, const char *name, npy_array *out, char *err,
                     size_t err_size);
bool npy_read_file(const char *path, npy_array *out, char *err, size_t err_size);
void npy_free(npy_array *a);

/* Writes `data` (numel * itemsize bytes, C order) as `path`. */
bool npy_write_file(const char *path, npy_dtype dtype, int ndim, const int64_t *shape,
                    const void *data, char *err, size_t err_size);

#endif
