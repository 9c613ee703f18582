/* bench_nvdec: NVDEC decode throughput of an H.264/HEVC elementary stream
 * with 1, 2, 4 and 7 decoders running in parallel (Hopper has 7 NVDEC
 * engines), each on its own thread, as src/io/nvdec.h recommends.
 *
 *   bench_nvdec [--device SPEC] [--iters N] [--json] [--instances 1,2,4,7] [--delay D] STREAM
 *
 * The stream (e.g. .data/nvdec/test.h264 from scripts/make-nvdec-sample.sh)
 * is read into memory and split into access units once, so file I/O is not
 * timed. Each decoder first decodes the whole stream once (creating its
 * hardware decoder and frame pool), then all start together and decode it
 * N more times (--iters, default 8), receiving every frame (device NV12,
 * copied out of the decode surface) and releasing it at once. Reported:
 * frames per second over all decoders (wall time from the common start to
 * the last decoder's end) and per decoder. */
#include <pthread.h>

#include "bench_common.h"
#include "io/h264_es.h"
#include "io/nvdec.h"

#define MAX_INSTANCES 16

typedef struct stream_data {
    uint8_t *bytes;
    size_t size;
    size_t *off, *len;
    int count;
    pf_es_codec codec;
} stream_data;

typedef struct job {
    const stream_data *s;
    pf_device *dev;
    int passes;
    int delay;
    pthread_barrier_t *start;
    int64_t t_start, t_end;
    uint64_t frames;
    uint64_t errors;
    pf_status st;
    char msg[256];
    pf_nvdec_info info;
} job;

static pf_status decode_pass(pf_nvdec *d, const stream_data *s, uint64_t *frames)
{
    for (int a = 0; a < s->count; a++) {
        pf_status st = pf_nvdec_decode(d, s->bytes + s->off[a], s->len[a], PF_NOPTS);
        if (st != PF_OK) return st;
        pf_frame f = {0};
        while (pf_nvdec_receive(d, &f) == PF_OK) {
            (*frames)++;
            pf_frame_unref(&f);
        }
    }
    return PF_OK;
}

static void *job_main(void *arg)
{
    job *j = arg;
    pf_nvdec_params p = pf_nvdec_params_default();
    p.device = j->dev;
    p.codec = j->s->codec;
    p.name = "bench";
    p.display_delay = j->delay;
    pf_nvdec *d = NULL;
    uint64_t warm = 0;
    pf_nvdec_stats ws = {0};
    j->st = pf_nvdec_create(&p, &d);
    if (j->st == PF_OK) j->st = decode_pass(d, j->s, &warm);
    if (j->st == PF_OK) j->st = pf_nvdec_get_stats(d, &ws);
    if (j->st != PF_OK) snprintf(j->msg, sizeof j->msg, "%s", pf_last_error());
    pthread_barrier_wait(j->start); /* every thread comes, failed or not */
    j->t_start = pf_time_ns();
    for (int i = 0; i < j->passes && j->st == PF_OK; i++) j->st = decode_pass(d, j->s, &j->frames);
    if (j->st == PF_OK) j->st = pf_nvdec_flush(d);
    pf_frame f = {0};
    while (j->st == PF_OK && pf_nvdec_receive(d, &f) == PF_OK) {
        j->frames++;
        pf_frame_unref(&f);
    }
    j->t_end = pf_time_ns();
    /* pictures of the warm-up pass still held by the parser were decoded
     * before the clock started: not counted */
    uint64_t pending = ws.pictures - ws.frames;
    j->frames = j->frames > pending ? j->frames - pending : 0;
    if (j->st != PF_OK && !j->msg[0]) snprintf(j->msg, sizeof j->msg, "%s", pf_last_error());
    if (d) {
        pf_nvdec_get_info(d, &j->info);
        pf_nvdec_stats s;
        if (pf_nvdec_get_stats(d, &s) == PF_OK) j->errors = s.decode_errors + s.dropped;
    }
    pf_nvdec_destroy(&d);
    return NULL;
}

typedef struct result {
    int instances;
    uint64_t frames;
    double wall_s, fps, fps_per_decoder;
    uint64_t errors;
} result;

static int run(const stream_data *s, pf_device *dev, int n, int passes, int delay, result *r,
               pf_nvdec_info *info)
{
    job jobs[MAX_INSTANCES];
    pthread_t t[MAX_INSTANCES];
    pthread_barrier_t start;
    memset(jobs, 0, sizeof jobs);
    pthread_barrier_init(&start, NULL, (unsigned)n);
    int started = 0;
    for (int i = 0; i < n; i++) {
        jobs[i] = (job){.s = s, .dev = dev, .passes = passes, .delay = delay, .start = &start};
        if (pthread_create(&t[i], NULL, job_main, &jobs[i]) != 0) {
            fprintf(stderr, "bench_nvdec: pthread_create failed\n");
            exit(1); /* the barrier would wait forever */
        }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    int64_t t0 = INT64_MAX, t1 = 0;
    memset(r, 0, sizeof *r);
    r->instances = n;
    for (int i = 0; i < n; i++) {
        if (jobs[i].st != PF_OK) {
            fprintf(stderr, "bench_nvdec: decoder %d of %d: %s: %s\n", i, n,
                    pf_status_str(jobs[i].st), jobs[i].msg);
            return 1;
        }
        if (jobs[i].t_start < t0) t0 = jobs[i].t_start;
        if (jobs[i].t_end > t1) t1 = jobs[i].t_end;
        r->frames += jobs[i].frames;
        r->errors += jobs[i].errors;
    }
    *info = jobs[0].info;
    r->wall_s = (double)(t1 - t0) / 1e9;
    r->fps = r->wall_s > 0 ? (double)r->frames / r->wall_s : 0;
    r->fps_per_decoder = r->fps / n;
    return 0;
}

static int load(const char *path, stream_data *s)
{
    pf_es_reader *r = NULL;
    if (pf_es_reader_open(path, PF_ES_UNKNOWN, &r) != PF_OK) return 0;
    s->codec = pf_es_reader_codec(r);
    size_t cap = 0;
    const uint8_t *au;
    size_t n;
    pf_status st;
    while ((st = pf_es_reader_next(r, &au, &n)) == PF_OK) {
        if (s->count == (int)cap) {
            cap = cap ? 2 * cap : 1024;
            s->off = realloc(s->off, cap * sizeof *s->off);
            s->len = realloc(s->len, cap * sizeof *s->len);
        }
        uint8_t *nb = realloc(s->bytes, s->size + n);
        if (!nb || !s->off || !s->len) {
            fprintf(stderr, "bench_nvdec: out of memory\n");
            exit(1);
        }
        s->bytes = nb;
        memcpy(s->bytes + s->size, au, n);
        s->off[s->count] = s->size;
        s->len[s->count] = n;
        s->size += n;
        s->count++;
    }
    pf_es_reader_close(&r);
    return st == PF_EOF && s->count > 0;
}

int main(int argc, char **argv)
{
    bench_args args = {.prog = "bench_nvdec",
                       .iters_help = "passes over the stream per decoder",
                       .iters = 8,
                       .max_iters = 100000};
    int counts[MAX_INSTANCES] = {1, 2, 4, 7};
    int ncounts = 4;
    int delay = pf_nvdec_params_default().display_delay;
    const char *path = NULL;
    /* our own options out of argv; bench_start takes the common ones */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    if (!rest) return 1;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--instances") && i + 1 < argc) {
            ncounts = 0;
            for (char *tok = strtok(argv[++i], ","); tok && ncounts < MAX_INSTANCES;
                 tok = strtok(NULL, ",")) {
                int v = atoi(tok);
                if (v < 1 || v > MAX_INSTANCES) {
                    fprintf(stderr, "bench_nvdec: bad instance count '%s' (1..%d)\n", tok,
                            MAX_INSTANCES);
                    return 2;
                }
                counts[ncounts++] = v;
            }
        } else if (!strcmp(argv[i], "--delay") && i + 1 < argc) {
            delay = atoi(argv[++i]);
            if (delay < 0 || delay > 4) {
                fprintf(stderr, "bench_nvdec: bad --delay '%s' (0..4)\n", argv[i]);
                return 2;
            }
        } else if ((!strcmp(argv[i], "--device") || !strcmp(argv[i], "--iters")) &&
                   i + 1 < argc) {
            rest[nrest++] = argv[i++];
            rest[nrest++] = argv[i];
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            rest[nrest++] = argv[i];
        }
    }
    pf_device *dev = NULL;
    int rc = bench_start(nrest, rest, &args, &dev);
    free(rest);
    if (rc >= 0) {
        if (rc == 0) printf("  --instances LIST  decoders in parallel, e.g. 1,2,4,7\n"
                            "  --delay N         parser display delay 0..4 (default 2)\n"
                            "  STREAM            .h264/.hevc elementary stream\n");
        return rc;
    }
    if (!path) {
        fprintf(stderr, "bench_nvdec: no stream given (e.g. .data/nvdec/test.h264)\n");
        return 2;
    }
    if (pf_device_get_type(dev) != PF_DEVICE_CUDA) {
        fprintf(stderr, "bench_nvdec: NVDEC needs a CUDA device (got %s)\n",
                pf_device_spec(dev));
        return 1;
    }
    char why[512];
    if (!pf_nvdec_available(why, sizeof why)) {
        fprintf(stderr, "bench_nvdec: NVDEC not available: %s\n", why);
        return 1;
    }
    stream_data s;
    memset(&s, 0, sizeof s);
    if (!load(path, &s)) return bench_fail(args.prog, path);

    result res[MAX_INSTANCES];
    pf_nvdec_info info;
    memset(&info, 0, sizeof info);
    for (int k = 0; k < ncounts; k++)
        if (run(&s, dev, counts[k], args.iters, delay, &res[k], &info)) return 1;

    const pf_device_props *props = pf_device_props_get(dev);
    if (args.json) {
        printf("{\"bench\":\"nvdec\",\"device\":\"");
        bench_json_str(props->name);
        printf("\",\"stream\":\"");
        bench_json_str(path);
        printf("\",\"codec\":\"%s\",\"width\":%d,\"height\":%d,\"units\":%d,\"bytes\":%zu,"
               "\"passes\":%d,\"display_delay\":%d,\"engines\":%d,\"results\":[",
               pf_es_codec_name(s.codec), info.width, info.height, s.count, s.size, args.iters,
               delay, info.engines);
        for (int k = 0; k < ncounts; k++)
            printf("%s{\"decoders\":%d,\"frames\":%llu,\"seconds\":%.4f,\"fps\":%.1f,"
                   "\"fps_per_decoder\":%.1f,\"errors\":%llu}",
                   k ? "," : "", res[k].instances, (unsigned long long)res[k].frames,
                   res[k].wall_s, res[k].fps, res[k].fps_per_decoder,
                   (unsigned long long)res[k].errors);
        printf("]}\n");
    } else {
        printf("NVDEC decode, %s: %s %dx%d, %d access units (%.2f MB), %d passes per decoder, "
               "display delay %d\n",
               props->name, pf_es_codec_name(s.codec), info.width, info.height, s.count,
               (double)s.size / 1e6, args.iters, delay);
        printf("engines for this format: %d\n", info.engines);
        printf("%9s %9s %9s %11s %15s %7s\n", "decoders", "frames", "seconds", "fps",
               "fps/decoder", "errors");
        for (int k = 0; k < ncounts; k++)
            printf("%9d %9llu %9.3f %11.1f %15.1f %7llu\n", res[k].instances,
                   (unsigned long long)res[k].frames, res[k].wall_s, res[k].fps,
                   res[k].fps_per_decoder, (unsigned long long)res[k].errors);
    }
    free(s.bytes);
    free(s.off);
    free(s.len);
    return 0;
}
