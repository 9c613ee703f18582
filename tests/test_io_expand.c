/* The input expander shared by segment, reproject and io.image_source
 * (src/io/expand.h): a directory's files by extension (sorted, hidden files
 * and subdirectories left out, no "//"), a glob's files, anything else
 * itself. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/expand.h"
#include "pf_test.h"

static char g_dir[128];

static void touch(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

static const char *p(const char *name)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
    return b;
}

static void directory(void)
{
    pf_path_list l = {0};
    pf_expand_what what = PF_EXPAND_FILE;
    CHECK_OK(pf_expand_input(g_dir, PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_DIR);
    REQUIRE(l.count == 2);
    CHECK(!strcmp(l.paths[0], p("a.png")));
    CHECK(!strcmp(l.paths[1], p("b.JPG")));
    pf_path_list_free(&l);
    char slash[256];
    snprintf(slash, sizeof slash, "%s/", g_dir);
    CHECK_OK(pf_expand_input(slash, PF_EXPAND_IMAGES | PF_EXPAND_VIDEOS, &l, &what));
    REQUIRE(l.count == 3);
    CHECK(!strcmp(l.paths[2], p("v.mp4"))); /* one slash */
    CHECK(pf_expand_has_ext(l.paths[2], PF_EXPAND_VIDEOS));
    CHECK(!pf_expand_has_ext(l.paths[2], PF_EXPAND_IMAGES));
    pf_path_list_free(&l);
    CHECK_OK(pf_expand_input(p("empty"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_DIR);
    CHECK_EQ_INT(l.count, 0);
    pf_path_list_free(&l);
}

static void pattern_and_file(void)
{
    pf_path_list l = {0};
    pf_expand_what what = PF_EXPAND_FILE;
    CHECK_OK(pf_expand_input(p("*.png"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_GLOB);
    REQUIRE(l.count == 1); /* sub.png is a directory */
    CHECK(!strcmp(l.paths[0], p("a.png")));
    pf_path_list_free(&l);
    CHECK_OK(pf_expand_input(p("*.gif"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_GLOB);
    CHECK_EQ_INT(l.count, 0);
    pf_path_list_free(&l);
    /* A file, existing or not, is itself (its reader says what is wrong). */
    CHECK_OK(pf_expand_input(p("c.txt"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_OK(pf_expand_input(p("missing.png"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_FILE);
    REQUIRE(l.count == 2);
    CHECK(!strcmp(l.paths[1], p("missing.png")));
    pf_path_list_free(&l);
    /* An existing name with glob characters is a file, not a pattern. */
    touch("x[1].png");
    CHECK_OK(pf_expand_input(p("x[1].png"), PF_EXPAND_IMAGES, &l, &what));
    CHECK_EQ_INT(what, PF_EXPAND_FILE);
    pf_path_list_free(&l);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/pf_test_expand_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    touch("b.JPG");
    touch("a.png");
    touch(".hidden.png");
    touch("c.txt");
    touch("v.mp4");
    mkdir(p("sub.png"), 0777);
    mkdir(p("empty"), 0777);
    PF_RUN(directory);
    PF_RUN(pattern_and_file);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return pf_test_finish();
}
