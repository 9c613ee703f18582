/* The .npy reader/writer of `pixflow model run` (tools/pixflow/npy.c, built
 * into this test): valid files of every supported dtype and version, round
 * trips, and each class of malformed or unsupported file refused with a
 * message naming the problem. */
#include "../tools/pixflow/npy.c"

#include <unistd.h>

#include "pf_test.h"

/* An image of a .npy: preamble for `ver`, header dict padded to 64, data. */
static size_t make(unsigned char *buf, size_t cap, int ver, const char *dict, const void *data,
                   size_t nbytes)
{
    size_t pre = ver == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = pre + dl + 1, pad = (64 - total % 64) % 64, hlen = dl + pad + 1;
    if (pre + hlen + nbytes > cap) return 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)ver;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', pad);
    buf[pre + hlen - 1] = '\n';
    if (nbytes) memcpy(buf + pre + hlen, data, nbytes);
    return pre + hlen + nbytes;
}

static unsigned char img[1 << 16];

static void test_valid(void)
{
    float f[6] = {1, 2, 3, 4, 5, 6};
    for (int ver = 1; ver <= 3; ver++) {
        size_t n = make(img, sizeof img, ver,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, sizeof f);
        npy_array a;
        char err[256];
        CHECK(npy_read_memory(img, n, "a.npy", &a, err, sizeof err));
        CHECK_EQ_INT(a.dtype, NPY_F4);
        CHECK_EQ_INT(a.ndim, 2);
        CHECK_EQ_INT(a.shape[0], 2);
        CHECK_EQ_INT(a.shape[1], 3);
        CHECK_EQ_INT(a.numel, 6);
        CHECK(a.data && !memcmp(a.data, f, sizeof f));
        npy_free(&a);
    }
    /* other spellings NumPy or people produce: double quotes, no trailing
     * comma, 1-tuples, scalars, key order, byte-order-free u1 */
    static const struct {
        const char *dict;
        npy_dtype t;
        int ndim;
        size_t nbytes;
    } ok[] = {
        {"{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3,)}", NPY_I8, 1, 24},
        {"{'shape': (), 'fortran_order': False, 'descr': '<i4'}", NPY_I4, 0, 4},
        {"{'descr':'|u1','fortran_order':False,'shape':(2,2,)}", NPY_U1, 2, 4},
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (0, 5), }", NPY_B1, 2, 0},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 2), }",
         NPY_F2, 8, 4},
        {"{'descr': '>u1', 'fortran_order': False, 'shape': (1,), }", NPY_U1, 1, 1},
    };
    unsigned char zeros[64] = {0};
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        size_t n = make(img, sizeof img, 1, ok[k].dict, zeros, ok[k].nbytes);
        npy_array a;
        char err[256] = "";
        bool r = npy_read_memory(img, n, "b.npy", &a, err, sizeof err);
        if (!r) fprintf(stderr, "  case %zu: %s\n", k, err);
        CHECK(r);
        CHECK_EQ_INT(a.dtype, ok[k].t);
        CHECK_EQ_INT(a.ndim, ok[k].ndim);
        CHECK_EQ_INT(a.nbytes, ok[k].nbytes);
        npy_free(&a);
    }
}

static void test_refused(void)
{
    static const struct {
        const char *dict;
        size_t nbytes;
        const char *msg;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "fortran_order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported dtype"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 4, "data bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12, "data bytes"},
        {"{'descr': '<f4', 'shape': (2,), }", 8, "fortran_order"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8, "twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "unexpected key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
         "dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 0,
         "overflows"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4, "structured"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8, "trailing"},
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 2, "bool"},
    };
    unsigned char data[64];
    memset(data, 7, sizeof data);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t n = make(img, sizeof img, 1, bad[k].dict, data, bad[k].nbytes);
        npy_array a;
        char err[256] = "";
        CHECK(!npy_read_memory(img, n, "bad.npy", &a, err, sizeof err));
        CHECK(a.data == NULL && a.nbytes == 0);
        if (!strstr(err, bad[k].msg) || !strstr(err, "bad.npy"))
            fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", k, err, bad[k].msg);
        CHECK(strstr(err, bad[k].msg) != NULL);
    }
    /* preamble problems */
    npy_array a;
    char err[256];
    size_t n = make(img, sizeof img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                    data, 4);
    CHECK(!npy_read_memory(img, 5, "t.npy", &a, err, sizeof err));
    img[0] = 'x';
    CHECK(!npy_read_memory(img, n, "t.npy", &a, err, sizeof err));
    CHECK(strstr(err, "magic") != NULL);
    img[0] = 0x93;
    img[6] = 4;
    CHECK(!npy_read_memory(img, n, "t.npy", &a, err, sizeof err));
    CHECK(strstr(err, "version") != NULL);
    img[6] = 1;
    img[8] = 0xff;
    img[9] = 0xff;
    CHECK(!npy_read_memory(img, n, "t.npy", &a, err, sizeof err));
    CHECK(strstr(err, "past the end") != NULL);
    /* a header that does not end in a newline */
    n = make(img, sizeof img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", data, 4);
    img[10 + 53] = ' ';
    CHECK(!npy_read_memory(img, n, "t.npy", &a, err, sizeof err));
    /* every truncation of a valid file fails cleanly */
    n = make(img, sizeof img, 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}", data, 12);
    for (size_t cut = 0; cut < n; cut++) CHECK(!npy_read_memory(img, cut, "t.npy", &a, err, sizeof err));
    CHECK(npy_read_memory(img, n, "t.npy", &a, err, sizeof err));
    npy_free(&a);
    CHECK(!npy_read_file("/nonexistent/x.npy", &a, err, sizeof err));
    CHECK(strstr(err, "/nonexistent/x.npy") != NULL);
}

static void test_roundtrip(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/test_npy_%d.npy", (int)getpid());
    for (int t = 0; t < NPY_DTYPE_COUNT; t++) {
        int64_t shapes[3][3] = {{2, 3, 5}, {7, 0, 0}, {0, 0, 0}};
        int ndims[3] = {3, 1, 0};
        for (int s = 0; s < 3; s++) {
            int64_t n = 1;
            for (int d = 0; d < ndims[s]; d++) n *= shapes[s][d];
            size_t nb = (size_t)n * npy_dtype_size((npy_dtype)t);
            unsigned char *buf = malloc(nb ? nb : 1);
            REQUIRE(buf);
            for (size_t i = 0; i < nb; i++) buf[i] = t == NPY_B1 ? (unsigned char)(i & 1) : (unsigned char)(i * 37 + 1);
            char err[256];
            CHECK(npy_write_file(path, (npy_dtype)t, ndims[s], shapes[s], buf, err, sizeof err));
            npy_array a;
            CHECK(npy_read_file(path, &a, err, sizeof err));
            CHECK_EQ_INT(a.dtype, t);
            CHECK_EQ_INT(a.ndim, ndims[s]);
            CHECK_EQ_INT(a.nbytes, nb);
            CHECK(nb == 0 || (a.data && !memcmp(a.data, buf, nb)));
            /* the header is padded so the data starts on a 64-byte boundary */
            FILE *f = fopen(path, "rb");
            if (f) {
                fseek(f, 0, SEEK_END);
                CHECK_EQ_INT(((size_t)ftell(f) - nb) % 64, 0);
                fclose(f);
            }
            npy_free(&a);
            free(buf);
        }
    }
    remove(path);
}

int main(void)
{
    PF_RUN(test_valid);
    PF_RUN(test_refused);
    PF_RUN(test_roundtrip);
    return pf_test_finish();
}
