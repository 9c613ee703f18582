/* Frames between two GPUs (needs two CUDA devices; exits 77 otherwise).
 *
 * pf_device_peer_access(cuda:0, cuda:1): asked once, the answer cached and
 * symmetric. Then one pipeline per case, source.synthetic making 1080p RGB
 * frames in device memory of cuda:0 and sink.checksum on cuda:1, so the
 * runtime inserts a transfer: the checksum (of what the frames show) must
 * equal that of the same frames checksummed on cuda:0 without any transfer,
 * every frame is counted as a transfer, and as a peer-to-peer one exactly
 * when the pair has peer access (else through pinned host memory). A raw
 * pf_buffer_copy_async from cuda:0 memory on a cuda:1 stream succeeds with
 * peer access and is refused without. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_test_util.h"

#define W 1920
#define H 1080
#define COUNT 120

static char g_dir[256];

static bool read_sum(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(out, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

/* source on `from`, checksum on `to`; the sum's text into out. */
static bool run(pf_device *from, pf_device *to, const char *tag, char *out, size_t size,
                pf_pipeline_stats *stats_out)
{
    char sum_path[400], w[16], h[16], count[16];
    snprintf(sum_path, sizeof sum_path, "%s/%s.txt", g_dir, tag);
    snprintf(w, sizeof w, "%d", W);
    snprintf(h, sizeof h, "%d", H);
    snprintf(count, sizeof count, "%d", COUNT);
    pf_pipeline_params pp = pf_pipeline_params_default();
    pp.name = tag;
    pf_pipeline *p = NULL;
    if (pf_pipeline_create(&pp, &p) != PF_OK) return false;
    pf_stage_param kv[] = {{"width", w, 0},   {"height", h, 0},       {"count", count, 0},
                           {"pool", "8", 0},  {"memory", "device", 0}, {"speed", "7", 0}};
    pf_stage_config cfg = {.name = "syn", .params = kv, .num_params = 6, .device = from};
    pf_stage_desc d;
    pf_stage *src = NULL, *sum = NULL;
    bool ok = pf_stage_builtin("source.synthetic", &cfg, &d) == PF_OK &&
              pf_pipeline_add_stage(p, &d, &src) == PF_OK;
    pf_stage_param ck[] = {{"file", sum_path, 0}};
    cfg = (pf_stage_config){.name = "sum", .params = ck, .num_params = 1, .device = to};
    ok = ok && pf_stage_builtin("sink.checksum", &cfg, &d) == PF_OK &&
         pf_pipeline_add_stage(p, &d, &sum) == PF_OK;
    pf_edge_params ep = pf_edge_params_default();
    ep.capacity = 4;
    ok = ok && pf_pipeline_connect(p, src, sum, &ep) == PF_OK && pf_pipeline_start(p) == PF_OK &&
         pf_pipeline_wait(p, 120 * 1000000ll) == PF_OK;
    if (ok) ok = pf_pipeline_get_stats(p, stats_out) == PF_OK;
    if (!ok) fprintf(stderr, "  %s: %s\n", tag, pf_last_error());
    if (ok) pf_pipeline_print_stats(p, stdout);
    pf_pipeline_destroy(&p);
    return ok && read_sum(sum_path, out, size);
}

static pf_device *d0, *d1;

static void test_two_gpus(void)
{
    pf_device *cpu = NULL;
    REQUIRE(pf_device_get(PF_DEVICE_CPU, 0, &cpu) == PF_OK);
    bool peer = pf_device_peer_access(d0, d1);
    CHECK(pf_device_peer_access(d1, d0) == peer);
    CHECK(!pf_device_peer_access(d0, d0));
    CHECK(!pf_device_peer_access(d0, cpu));
    printf("  cuda:0 <-> cuda:1: %s\n", peer ? "peer-to-peer" : "no peer access");

    /* A raw copy from cuda:0 memory on a cuda:1 stream. */
    pf_stream *s1 = make_stream(d1, 0);
    pf_allocator *a0 = pf_test_allocator_create(d0, "p2p-0", PF_MEM_DEVICE, 0);
    pf_allocator *a1 = pf_test_allocator_create(d1, "p2p-1", PF_MEM_DEVICE, 0);
    pf_buffer *b0 = NULL, *b1 = NULL;
    REQUIRE(pf_allocator_alloc(a0, 1 << 20, NULL, &b0) == PF_OK);
    REQUIRE(pf_allocator_alloc(a1, 1 << 20, s1, &b1) == PF_OK);
    pf_status cst = pf_buffer_copy_async(s1, b1, 0, b0, 0, 1 << 20);
    CHECK(peer ? cst == PF_OK : cst == PF_ERR_UNSUPPORTED);
    pf_stream_synchronize(s1);
    pf_buffer_unref(&b0);
    pf_buffer_unref(&b1);
    pf_allocator_destroy(&a0);
    pf_allocator_destroy(&a1);
    pf_stream_destroy(&s1);

    char same[128] = "", across[128] = "", back[128] = "";
    pf_pipeline_stats st0, st1, st2;
    REQUIRE(run(d0, d0, "same", same, sizeof same, &st0));
    REQUIRE(run(d0, d1, "across", across, sizeof across, &st1));
    REQUIRE(run(d1, d0, "back", back, sizeof back, &st2));
    printf("  same device: %s  across: %s  back: %s", same, across, back);
    CHECK(!strcmp(same, across));
    CHECK(!strcmp(same, back));
    CHECK_EQ_INT(st0.transfers, 0);
    CHECK_EQ_INT(st1.transfers, COUNT);
    CHECK_EQ_INT(st1.transfers_p2p, peer ? COUNT : 0);
    CHECK_EQ_INT(st2.transfers_p2p, peer ? COUNT : 0);
}

int main(void)
{
    d0 = pf_test_cuda_device_or_skip();
    if (pf_device_count(PF_DEVICE_CUDA) < 2) {
        printf("SKIP: one CUDA device (this test needs two)\n");
        return 77;
    }
    if (pf_device_get(PF_DEVICE_CUDA, 1, &d1) != PF_OK) return 1;
    snprintf(g_dir, sizeof g_dir, "/tmp/pf_p2p_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    PF_RUN(test_two_gpus);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) return 1;
    return pf_test_finish();
}
