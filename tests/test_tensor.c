/* pf_tensor: shapes, strides, wrap bounds, slices, f16 conversion. */
#include <math.h>

#include "pf_test.h"

static void test_alloc_contiguous(void)
{
    pf_tensor t = {0};
    int64_t shape[4] = {2, 3, 4, 5};
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, NULL, NULL));
    CHECK_EQ_INT(pf_tensor_numel(&t), 120);
    CHECK_EQ_INT(pf_tensor_nbytes(&t), 480);
    CHECK(t.strides[0] == 60 && t.strides[1] == 20 && t.strides[2] == 5 && t.strides[3] == 1);
    CHECK(pf_tensor_is_contiguous(&t));
    CHECK(pf_tensor_domain(&t) == PF_MEM_HOST);
    pf_tensor u = {0};
    pf_tensor_ref(&u, &t);
    CHECK_EQ_INT(pf_buffer_refcount(t.buf), 2);
    pf_tensor_unref(&t);
    pf_tensor_unref(&u);
    CHECK(u.buf == NULL);

    /* scalar and empty tensors */
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_U8, 0, NULL, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_tensor_numel(&t), 1);
    pf_tensor_unref(&t);
    int64_t empty[2] = {0, 7};
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_I32, 2, empty, PF_LAYOUT_NONE, NULL, NULL));
    CHECK_EQ_INT(pf_tensor_numel(&t), 0);
    CHECK_EQ_INT(pf_tensor_nbytes(&t), 0);
    pf_tensor_unref(&t);
}

static void test_alloc_errors(void)
{
    pf_tensor t = {0};
    int64_t s3[3] = {1, 2, 3};
    CHECK(pf_tensor_alloc(&t, PF_DTYPE_F16, 3, s3, PF_LAYOUT_NHWC, NULL, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "nhwc needs 4 dims") != NULL);
    int64_t neg[2] = {4, -1};
    CHECK(pf_tensor_alloc(&t, PF_DTYPE_F16, 2, neg, PF_LAYOUT_NONE, NULL, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "dim 1 is negative") != NULL);
    int64_t big[3] = {1 << 30, 1 << 30, 1 << 30};
    CHECK(pf_tensor_alloc(&t, PF_DTYPE_F32, 3, big, PF_LAYOUT_NONE, NULL, NULL) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "overflow") != NULL);
    CHECK(pf_tensor_alloc(&t, PF_DTYPE_F32, 9, big, PF_LAYOUT_NONE, NULL, NULL) == PF_ERR_INVALID);
    CHECK(pf_tensor_alloc(&t, (pf_dtype)17, 1, s3, PF_LAYOUT_NONE, NULL, NULL) == PF_ERR_INVALID);
    CHECK(t.buf == NULL);
}

static void test_wrap_bounds(void)
{
    pf_buffer *b = NULL;
    CHECK_OK(pf_buffer_alloc_host(64, &b));
    pf_tensor t = {0};
    int64_t shape[2] = {4, 4};
    CHECK_OK(pf_tensor_wrap(&t, b, 0, PF_DTYPE_F32, 2, shape, NULL, PF_LAYOUT_NONE));
    pf_tensor_unref(&t);
    CHECK(pf_tensor_wrap(&t, b, 4, PF_DTYPE_F32, 2, shape, NULL, PF_LAYOUT_NONE) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "buffer has 64") != NULL);
    CHECK(pf_tensor_wrap(&t, b, 2, PF_DTYPE_F32, 1, shape, NULL, PF_LAYOUT_NONE) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "misaligned") != NULL);
    /* strided: 4 rows of 2 with row stride 4 reaches element 13 -> 56 bytes */
    int64_t s2[2] = {4, 2}, st[2] = {4, 1};
    CHECK_OK(pf_tensor_wrap(&t, b, 8, PF_DTYPE_F32, 2, s2, st, PF_LAYOUT_NONE));
    CHECK(!pf_tensor_is_contiguous(&t));
    CHECK_EQ_INT(pf_tensor_nbytes(&t), 56);
    pf_tensor_unref(&t);
    CHECK(pf_tensor_wrap(&t, b, 12, PF_DTYPE_F32, 2, s2, st, PF_LAYOUT_NONE) == PF_ERR_INVALID);
    int64_t negst[2] = {-4, 1};
    CHECK(pf_tensor_wrap(&t, b, 0, PF_DTYPE_F32, 2, s2, negst, PF_LAYOUT_NONE) == PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_refcount(b), 1);
    pf_buffer_unref(&b);
}

static void test_slice(void)
{
    pf_tensor t = {0}, s = {0};
    int64_t shape[4] = {8, 3, 2, 2};
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, NULL, NULL));
    float *d = t.data;
    for (int i = 0; i < 96; i++) d[i] = (float)i;
    CHECK_OK(pf_tensor_slice(&s, &t, 0, 5, 2));
    CHECK(s.shape[0] == 2 && ((float *)s.data)[0] == 60.0f);
    CHECK(pf_tensor_is_contiguous(&s));
    pf_tensor s2 = {0};
    CHECK_OK(pf_tensor_slice(&s2, &t, 1, 1, 1)); /* channel 1 of every image */
    CHECK(!pf_tensor_is_contiguous(&s2));
    CHECK(((float *)s2.data)[0] == 4.0f);
    CHECK(pf_tensor_slice(&s2, &t, 0, 7, 2) == PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "outside dim 0 of size 8") != NULL);
    CHECK(pf_tensor_slice(&s2, &t, 4, 0, 1) == PF_ERR_INVALID);
    CHECK_EQ_INT(pf_buffer_refcount(t.buf), 3);
    pf_tensor_unref(&s);
    pf_tensor_unref(&s2);
    pf_tensor_unref(&t);
}

/* Every half value round-trips; float -> half matches the compiler's _Float16
 * conversion (round to nearest even) on random and special values. */
static void test_f16(void)
{
    int mism = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pf_f16_to_f32((uint16_t)h);
        uint16_t back = pf_f32_to_f16(f);
        int is_nan = ((h & 0x7C00) == 0x7C00) && (h & 0x3FF);
        if (is_nan) {
            if (!isnan(f) || (back & 0x7C00) != 0x7C00 || !(back & 0x3FF)) mism++;
        } else if (back != h) {
            mism++;
        }
#if defined(__FLT16_MAX__)
        if (!is_nan) {
            _Float16 hf;
            memcpy(&hf, &h, 2);
            if ((float)hf != f) mism++;
        }
#endif
    }
    CHECK_EQ_INT(mism, 0);
#if defined(__FLT16_MAX__)
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t bits = (uint32_t)pf_test_rand();
        float f;
        memcpy(&f, &bits, 4);
        if (isnan(f)) continue;
        _Float16 ref = (_Float16)f;
        uint16_t rb;
        memcpy(&rb, &ref, 2);
        if (pf_f32_to_f16(f) != rb) bad++;
    }
    CHECK_EQ_INT(bad, 0);
#else
    printf("note: compiler has no _Float16; only the round-trip check ran\n");
#endif
    CHECK(pf_f32_to_f16(65520.0f) == 0x7C00);   /* rounds to inf */
    CHECK(pf_f32_to_f16(65519.0f) == 0x7BFF);   /* largest finite */
    CHECK(pf_f32_to_f16(-0.0f) == 0x8000);
    CHECK(pf_f32_to_f16(5.9604645e-8f) == 0x0001); /* smallest subnormal */
    CHECK(pf_f32_to_f16(2.9802322e-8f) == 0x0000); /* half of it: ties to even -> 0 */
}

static void test_names(void)
{
    pf_dtype dt;
    for (int i = 0; i < PF_DTYPE_COUNT; i++) {
        CHECK_OK(pf_dtype_parse(pf_dtype_name((pf_dtype)i), &dt));
        CHECK(dt == (pf_dtype)i);
    }
    CHECK(pf_dtype_parse("bf16", &dt) == PF_ERR_INVALID);
    CHECK_EQ_INT(pf_dtype_size(PF_DTYPE_F16), 2);
    CHECK(strcmp(pf_layout_name(PF_LAYOUT_NHWC), "nhwc") == 0);
}

int main(void)
{
    pf_test_seed(2);
    PF_RUN(test_alloc_contiguous);
    PF_RUN(test_alloc_errors);
    PF_RUN(test_wrap_bounds);
    PF_RUN(test_slice);
    PF_RUN(test_f16);
    PF_RUN(test_names);
    return pf_test_finish();
}
