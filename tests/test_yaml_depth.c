/* Deeply nested YAML is refused quickly, naming the limit and the line.
 *
 * 100k '[' once took 46 s in libyaml (its scanner does work proportional to the nesting at
 * every token); the loader now stops at the first collection deeper than 64 levels. The time
 * bound (2 s for 100k levels, three shapes) is generous for the bounded scan and far below
 * what the unbounded one took. */
#include <time.h>

#include "pf_test.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Loads `text` as a pipeline; it must fail with PF_ERR_FORMAT naming the depth and `line`. */
static void expect_too_deep(const char *text, int line)
{
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.text = text;
    p.text_len = strlen(text);
    pf_pipeline *pl = NULL;
    double t0 = now_s();
    pf_status st = pf_pipeline_create_from_yaml(&p, &pl);
    double dt = now_s() - t0;
    printf("  %.3f s: %s\n", dt, pf_last_error());
    CHECK_EQ_INT(st, PF_ERR_FORMAT);
    CHECK(pl == NULL);
    CHECK(strstr(pf_last_error(), "deeper than 64 levels") != NULL);
    char where[32];
    snprintf(where, sizeof where, "<string>:%d: ", line);
    CHECK(strstr(pf_last_error(), where) == pf_last_error());
    CHECK(dt < 2.0);
    pf_pipeline_destroy(&pl);
}

static char *repeat(const char *head, const char *unit, int n, const char *tail)
{
    size_t hu = strlen(head), uu = strlen(unit), tu = strlen(tail);
    char *s = malloc(hu + uu * (size_t)n + tu + 1);
    if (!s) return NULL;
    memcpy(s, head, hu);
    for (int i = 0; i < n; i++) memcpy(s + hu + uu * (size_t)i, unit, uu);
    memcpy(s + hu + uu * (size_t)n, tail, tu + 1);
    return s;
}

static void test_flow_sequences(void)
{
    char *s = repeat("stages:\n  - ", "[", 100000, "\n");
    REQUIRE(s);
    expect_too_deep(s, 2);
    free(s);
}

static void test_flow_maps(void)
{
    char *s = repeat("name: x\n\nstages: ", "{a: ", 100000, "\n");
    REQUIRE(s);
    expect_too_deep(s, 3);
    free(s);
}

static void test_block_sequences(void)
{
    char *s = repeat("", "- ", 100000, "x\n");
    REQUIRE(s);
    expect_too_deep(s, 1);
    free(s);
}

/* 64 levels are still parsed (and then refused by the schema, not by the depth check). */
static void test_at_the_limit(void)
{
    char *s = repeat("stages: ", "[", 63, "");
    REQUIRE(s);
    char *t = malloc(strlen(s) + 64 + 2);
    REQUIRE(t);
    strcpy(t, s);
    for (int i = 0; i < 63; i++) strcat(t, "]");
    strcat(t, "\n");
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.text = t;
    p.text_len = strlen(t);
    pf_pipeline *pl = NULL;
    CHECK(pf_pipeline_create_from_yaml(&p, &pl) == PF_ERR_FORMAT);
    CHECK(strstr(pf_last_error(), "deeper than") == NULL);
    free(s);
    free(t);
}

int main(void)
{
    /* A build without libyaml (the GPU machine) has no loader to bound. */
    pf_pipeline_yaml_params p = pf_pipeline_yaml_params_default();
    p.text = "name: x\n";
    p.text_len = strlen(p.text);
    pf_pipeline *pl = NULL;
    if (pf_pipeline_create_from_yaml(&p, &pl) == PF_ERR_UNSUPPORTED) {
        printf("SKIP: %s\n", pf_last_error());
        return 77;
    }
    pf_pipeline_destroy(&pl);
    PF_RUN(test_flow_sequences);
    PF_RUN(test_flow_maps);
    PF_RUN(test_block_sequences);
    PF_RUN(test_at_the_limit);
    return pf_test_finish();
}
