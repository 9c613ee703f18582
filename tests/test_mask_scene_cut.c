/* Temporal mask smoothing starts over at a scene cut (pf_ops_mask_temporal_cut).
 *
 * A "person" mask (a block of ones) is smoothed for a few frames, then the shot changes: the
 * next mask is another block, half the frame away. Without the cut test the smoothed mask of the
 * new shot still holds 40% of the old one (alpha 0.6) and fades over several frames (a ghost);
 * with it, the state equals the new mask exactly, on the C reference and the threaded CPU path.
 * Small changes (a block moving by one pixel) are still smoothed; cut 0 never starts over; the
 * threshold is strict (a mean exactly at the cut smooths). */
#include "ops_test_util.h"
#include "pf_test.h"

#define MH 64
#define MW 64

static pf_ops *g_ref, *g_cpu;

static void block(pf_tensor *t, int x0, int y0, int w, int h)
{
    float *p = t->data;
    for (int y = 0; y < MH; y++)
        for (int x = 0; x < MW; x++)
            p[y * MW + x] = x >= x0 && x < x0 + w && y >= y0 && y < y0 + h ? 1.0f : 0.0f;
}

static pf_tensor mask_tensor(void)
{
    pf_tensor t = {0};
    int64_t shape[4] = {1, 1, MH, MW};
    CHECK_OK(pf_tensor_alloc(&t, PF_DTYPE_F32, 4, shape, PF_LAYOUT_NCHW, NULL, NULL));
    return t;
}

static bool equal(const pf_tensor *a, const pf_tensor *b)
{
    return !memcmp(a->data, b->data, sizeof(float) * MH * MW);
}

static void run_cut(pf_ops *ops)
{
    pf_tensor state = mask_tensor(), m = mask_tensor();
    REQUIRE(state.data && m.data);
    /* Shot 1: a 24x40 person on the left, moving one pixel per frame: smoothed. */
    block(&m, 4, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.6f, 0.1f, true));
    for (int f = 1; f < 5; f++) {
        block(&m, 4 + f, 10, 24, 40);
        CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.6f, 0.1f, false));
        CHECK(!equal(&state, &m)); /* still smoothing: 40 changed pixels of 4096 */
    }
    /* Shot 2: the person on the right (mean |diff| about 0.47): the state is the new mask. */
    block(&m, 36, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.6f, 0.1f, false));
    CHECK(equal(&state, &m));
    /* Without the test (cut 0), the same cut leaves a ghost of shot 1. */
    block(&m, 4, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.6f, 0.0f, true));
    block(&m, 36, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.6f, 0.0f, false));
    CHECK(!equal(&state, &m));
    CHECK(fabsf(((float *)state.data)[30 * MW + 10] - 0.4f) < 1e-6f); /* the ghost */
    /* pf_ops_mask_temporal is cut 0. */
    block(&m, 4, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal(ops, &state, &m, 0.6f, true));
    block(&m, 36, 10, 24, 40);
    CHECK_OK(pf_ops_mask_temporal(ops, &state, &m, 0.6f, false));
    CHECK(!equal(&state, &m));
    /* Strictly above: 256 of 4096 pixels differ by 1 (mean 0.0625) with cut 0.0625 smooths. */
    memset(state.data, 0, sizeof(float) * MH * MW);
    block(&m, 0, 0, 16, 16);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.5f, 0.0625f, false));
    CHECK(fabsf(((float *)state.data)[0] - 0.5f) < 1e-6f);
    memset(state.data, 0, sizeof(float) * MH * MW);
    CHECK_OK(pf_ops_mask_temporal_cut(ops, &state, &m, 0.5f, 0.06f, false));
    CHECK(equal(&state, &m));
    /* Out of range. */
    CHECK_EQ_INT(pf_ops_mask_temporal_cut(ops, &state, &m, 0.5f, -0.1f, false), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_ops_mask_temporal_cut(ops, &state, &m, 0.5f, NAN, false), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "scene-cut threshold") != NULL);
    pf_tensor_unref(&state);
    pf_tensor_unref(&m);
}

static void test_cut_reference(void) { run_cut(g_ref); }
static void test_cut_cpu(void) { run_cut(g_cpu); }

int main(void)
{
    pf_stream *hs = otu_cpu_stream();
    if (!hs) return 1;
    g_ref = otu_make_ops(hs, 1, NULL);
    g_cpu = otu_make_ops(hs, 0, NULL);
    if (!g_ref || !g_cpu) return 1;
    PF_RUN(test_cut_reference);
    PF_RUN(test_cut_cpu);
    pf_ops_destroy(&g_ref);
    pf_ops_destroy(&g_cpu);
    pf_stream_destroy(&hs);
    return pf_test_finish();
}
