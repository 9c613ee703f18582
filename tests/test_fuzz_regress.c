/* Replays the fuzzers' findings (tests/fuzz-regress/, one minimised input a
 * file, named after the fix) through the code that once crashed on them, and
 * checks each now ends in a clean error (a status and a message) or a clean
 * success; model load errors must also name the file (fuzz_model.h's strict
 * mode, on unless FUZZ_MODEL_STRICT=0).
 *
 *   .onnx / .tflite  the whole model loader and a CPU run of what loads
 *                    (fuzz/fuzz_model.h, as fuzz_onnx / fuzz_tflite do)
 *   .y4m             the Y4M header and frame parser
 *   .yaml            the YAML pipeline loader (device "cpu")
 *
 * Each file also carries the status it must give now, after its name's last
 * '-' and before the extension (ok, format, unsupported, invalid): for a
 * model, the load's, or the CPU run's when it loaded (ok: loaded and ran,
 * or too large to run). So a fix that turns a crash into a silent success,
 * or a run that should succeed into a failure, is noticed. Some inputs
 * (out-of-bounds reads) are caught only in a sanitizer build (CI runs this
 * test under ASan + UBSan too). */
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/y4m.h"
#include "pf_test.h"

static int fuzz_fail_count;
#define FUZZ_FAIL(what) \
    do { \
        fuzz_fail_count++; \
        fprintf(stderr, "  fuzz invariant failed: %s (%s)\n", what, pf_last_error()); \
    } while (0)
#include "../fuzz/fuzz_model.h"

static const char *dir_path(const char *sub)
{
    static char buf[4096];
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/tests/fuzz-regress%s", src && *src ? src : ".", sub);
    return buf;
}

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    *size = n;
    return buf;
}

static const char *ext_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : "";
}

/* The expected status from "<what>-<status>.<ext>". */
static int expected_status(const char *name, pf_status *out)
{
    const char *dash = strrchr(name, '-'), *dot = strrchr(name, '.');
    if (!dash || !dot || dot < dash) return 0;
    char word[32];
    size_t n = (size_t)(dot - dash - 1);
    if (n >= sizeof word) return 0;
    memcpy(word, dash + 1, n);
    word[n] = '\0';
    static const struct { const char *w; pf_status st; } k[] = {
        {"ok", PF_OK}, {"format", PF_ERR_FORMAT}, {"unsupported", PF_ERR_UNSUPPORTED},
        {"invalid", PF_ERR_INVALID}, {"io", PF_ERR_IO},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(word, k[i].w)) {
            *out = k[i].st;
            return 1;
        }
    return 0;
}

static pf_status replay_y4m(const char *path, const char *name)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return PF_ERR_IO;
    pf_y4m_header h;
    pf_status st = pf_y4m_read_header(fp, name, &h);
    if (st == PF_OK && (int64_t)h.width * h.height <= (4 << 20)) {
        pf_frame f = {0};
        uint8_t *scratch = malloc(pf_y4m_payload_size(&h));
        pf_pixfmt fmt = h.chroma == PF_Y4M_MONO ? PF_PIXFMT_GRAY8 : PF_PIXFMT_I420;
        if (scratch && pf_frame_alloc(&f, fmt, h.width, h.height, NULL, NULL) == PF_OK) {
            for (int64_t i = 0; st == PF_OK; i++)
                st = pf_y4m_read_frame(fp, name, &h, i, scratch, &f, NULL);
            if (st == PF_EOF) st = PF_OK;
        }
        pf_frame_unref(&f);
        free(scratch);
    }
    fclose(fp);
    return st;
}

static pf_status replay_yaml(const unsigned char *data, size_t size, const char *name)
{
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.path = name;
    p.text = (const char *)data;
    p.text_len = size;
    p.device = "cpu";
    pf_pipeline *pl = NULL;
    pf_status st = pf_pipeline_create_from_yaml(&p, &pl);
    CHECK((st == PF_OK) == (pl != NULL));
    pf_pipeline_destroy(&pl);
    return st;
}

/* Replays every file of tests/fuzz-regress<sub>; returns how many. */
static int replay_dir(const char *sub)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dir_path(sub));
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name, *ext = ext_of(name);
        if (name[0] == '.') continue;
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        size_t size = 0;
        unsigned char *data = read_all(path, &size);
        CHECK(data != NULL);
        if (!data) continue;
        pf_status want = PF_OK, got;
        CHECK(expected_status(name, &want));
        pf_clear_error();
        int before = fuzz_fail_count;
        if (!strcmp(ext, "onnx") || !strcmp(ext, "tflite")) got = fuzz_model_load(data, size, name);
        else if (!strcmp(ext, "y4m")) got = replay_y4m(path, name);
        else if (!strcmp(ext, "yaml")) got = replay_yaml(data, size, name);
        else {
            fprintf(stderr, "  %s: unknown kind\n", name);
            CHECK(0);
            free(data);
            continue;
        }
        if (got != PF_OK) CHECK(pf_last_error()[0] != '\0');
        if (got != want || fuzz_fail_count != before)
            fprintf(stderr, "  %s: %s, want %s: %s\n", name, pf_status_str(got),
                    pf_status_str(want), got ? pf_last_error() : "");
        CHECK_EQ_INT(got, want);
        CHECK_EQ_INT(fuzz_fail_count, before);
        printf("  %-48s %s%s%s\n", name, pf_status_str(got), got ? ": " : "",
               got ? pf_last_error() : "");
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

static void test_replay_fixed(void) { CHECK(replay_dir("") > 0); }

int main(void)
{
    pf_log_set_level(PF_LOG_QUIET);
    PF_RUN(test_replay_fixed);
    return pf_test_finish();
}
