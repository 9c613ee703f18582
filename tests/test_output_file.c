/* pf_output (pixflow/io.h): outputs are written under a temporary name and
 * renamed into place only when complete, and every writer goes through it.
 * Each case fails on the old writers: they opened the final path with "wb"
 * (truncating it at once), shared one "PATH.tmp" name between processes,
 * or left the final name truncated after a write error. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sys.h"
#include "io/io_impl.h"
#include "pf_test.h"
#include "pixflow/io.h"

static char g_dir[256];

static const char *path_in(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static bool put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The whole file as a string (up to 255 bytes), "" if missing. */
static const char *get(const char *path)
{
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Number of pf_output temporaries left in g_dir. */
static int temporaries(void)
{
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/.*.pftmp-*", g_dir);
    glob_t g;
    int n = glob(pattern, GLOB_NOSORT, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    return n;
}

static void test_commit_replaces_only_when_complete(void)
{
    const char *p = path_in("a.json");
    REQUIRE(put(p, "old"));
    pf_output *o = NULL;
    CHECK_OK(pf_output_open(p, 0, &o));
    REQUIRE(o);
    const char *tmp = pf_output_write_path(o);
    CHECK(!pf_output_in_place(o));
    CHECK(strcmp(tmp, p) != 0);
    /* Beside the output (same directory: rename is atomic there), hidden,
     * with the extension kept (FFmpeg picks its muxer from it). */
    CHECK(!strncmp(tmp, g_dir, strlen(g_dir)) && strstr(tmp, "/.a.json.pftmp-"));
    CHECK(strlen(tmp) > 5 && !strcmp(tmp + strlen(tmp) - 5, ".json"));
    fputs("new content", pf_output_file(o));
    fflush(pf_output_file(o));
    CHECK(!strcmp(get(p), "old")); /* the final name is untouched while writing */
    CHECK_OK(pf_output_commit(&o));
    CHECK(o == NULL);
    CHECK(!strcmp(get(p), "new content"));
    CHECK_EQ_INT(temporaries(), 0);
    CHECK_OK(pf_output_commit(&o)); /* NULL: nothing to do */
}

static void test_abort_keeps_the_old_file(void)
{
    const char *p = path_in("b.png");
    REQUIRE(put(p, "precious"));
    pf_output *o = NULL;
    CHECK_OK(pf_output_open(p, 0, &o));
    REQUIRE(o);
    fputs("half", pf_output_file(o));
    pf_output_abort(&o);
    CHECK(o == NULL);
    pf_output_abort(&o);
    pf_output_abort(NULL);
    CHECK(!strcmp(get(p), "precious"));
    CHECK_EQ_INT(temporaries(), 0);
}

static void test_errors_name_the_path(void)
{
    pf_output *o = NULL;
    CHECK_EQ_INT(pf_output_open(NULL, 0, &o), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_output_open("", 0, &o), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_output_open("x", 0, NULL), PF_ERR_INVALID);
    CHECK_EQ_INT(pf_output_open(path_in("missing-dir/x.png"), 0, &o), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "missing-dir/x.png") &&
          strstr(pf_last_error(), "directory does not exist"));
    CHECK_EQ_INT(pf_output_open(g_dir, 0, &o), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "is a directory"));
    CHECK(o == NULL);
}

static void test_no_overwrite(void)
{
    const char *p = path_in("c.y4m");
    REQUIRE(put(p, "mine"));
    pf_output *o = NULL;
    CHECK_EQ_INT(pf_output_open(p, PF_OUTPUT_NO_OVERWRITE, &o), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "c.y4m") && strstr(pf_last_error(), "already exists"));
    CHECK(o == NULL);
    /* A file that appears while the output is written is kept too (the
     * commit does not replace: renameat2 RENAME_NOREPLACE or link). */
    const char *q = path_in("d.y4m");
    CHECK_OK(pf_output_open(q, PF_OUTPUT_NO_OVERWRITE, &o));
    REQUIRE(o);
    fputs("late", pf_output_file(o));
    REQUIRE(put(q, "raced"));
    CHECK_EQ_INT(pf_output_commit(&o), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "d.y4m") && strstr(pf_last_error(), "already exists"));
    CHECK(!strcmp(get(q), "raced"));
    CHECK_EQ_INT(temporaries(), 0);
    /* The process-wide policy reaches every writer (here pf_image_write). */
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_GRAY8, 8, 8, NULL, NULL));
    memset(f.data[0], 77, f.stride[0] * 8);
    const char *img = path_in("e.png");
    REQUIRE(put(img, "not a png"));
    pf_output_set_default_flags(PF_OUTPUT_NO_OVERWRITE);
    CHECK_EQ_INT(pf_image_write(img, &f, NULL), PF_ERR_IO);
    CHECK(strstr(pf_last_error(), "e.png") && strstr(pf_last_error(), "already exists"));
    CHECK(!strcmp(get(img), "not a png"));
    pf_output_set_default_flags(0);
    CHECK_OK(pf_image_write(img, &f, NULL));
    CHECK(strcmp(get(img), "not a png") != 0);
    pf_frame_unref(&f);
}

/* Threads writing the same path at once: the result is one writer's
 * complete file, never a mix (the old "PATH.tmp" was shared). */
typedef struct racer {
    const char *path;
    int id;
    pf_status st;
} racer;

#define RACE_BYTES (256 * 1024)

static void *race_main(void *arg)
{
    racer *r = arg;
    pf_output *o = NULL;
    r->st = pf_output_open(r->path, 0, &o);
    if (r->st != PF_OK) return NULL;
    FILE *f = pf_output_file(o);
    for (int i = 0; i < RACE_BYTES; i++) fputc('A' + r->id, f);
    r->st = pf_output_commit(&o);
    return NULL;
}

static void test_concurrent_writers_never_mix(void)
{
    const char *p = path_in("race.bin");
    enum { N = 6 };
    pf_thread th[N];
    racer rc[N];
    for (int i = 0; i < N; i++) {
        rc[i] = (racer){p, i, PF_OK};
        CHECK_OK(pf_thread_start(&th[i], "race", race_main, &rc[i]));
    }
    for (int i = 0; i < N; i++) pf_thread_join(th[i]);
    for (int i = 0; i < N; i++) CHECK_OK(rc[i].st);
    FILE *f = fopen(p, "rb");
    REQUIRE(f);
    int first = fgetc(f), c, n = 1;
    bool same = first >= 'A' && first < 'A' + N;
    while ((c = fgetc(f)) != EOF) {
        same &= c == first;
        n++;
    }
    fclose(f);
    CHECK(same);
    CHECK_EQ_INT(n, RACE_BYTES);
    CHECK_EQ_INT(temporaries(), 0);
}

/* A full disk (RLIMIT_FSIZE in a child: writes past it fail with EFBIG) in
 * the middle of each writer: the final names keep their old contents and no
 * temporary is left. Child exit: 0 when every write failed cleanly. */
static int full_disk_child(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    int bad = 0;
    static char big[512 * 1024];
    memset(big, 'x', sizeof big);
    if (pf_output_write_file(path_in("full.bin"), big, sizeof big, 0) != PF_ERR_IO) bad |= 1;
    pf_frame f = {0};
    if (pf_frame_alloc(&f, PF_PIXFMT_RGB24, 512, 512, NULL, NULL) != PF_OK) return 11;
    pf_test_fill_random(f.data[0], f.stride[0] * 512); /* incompressible: > 64 KiB */
    if (pf_image_write(path_in("full.png"), &f, NULL) != PF_ERR_IO) bad |= 2;
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = path_in("full.y4m");
    wp.width = 512;
    wp.height = 512;
    wp.input_format = PF_PIXFMT_RGB24;
    pf_video_writer *w = NULL;
    if (pf_video_writer_create(&wp, &w) != PF_OK) return 12;
    pf_status st = PF_OK;
    for (int i = 0; i < 4 && st == PF_OK; i++) st = pf_video_writer_write(w, &f);
    if (st == PF_OK) st = pf_video_writer_close(w);
    if (st != PF_ERR_IO) bad |= 4;
    pf_video_writer_destroy(&w);
    pf_frame_unref(&f);
    /* A device that is full: written in place, the error still reported. */
    if (access("/dev/full", W_OK) == 0 &&
        pf_output_write_file("/dev/full", big, 4096, 0) != PF_ERR_IO)
        bad |= 8;
    return bad;
}

static void test_full_disk_leaves_old_files(void)
{
    REQUIRE(put(path_in("full.bin"), "old bin"));
    REQUIRE(put(path_in("full.png"), "old png"));
    REQUIRE(put(path_in("full.y4m"), "old y4m"));
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(full_disk_child());
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    CHECK(!strcmp(get(path_in("full.bin")), "old bin"));
    CHECK(!strcmp(get(path_in("full.png")), "old png"));
    CHECK(!strcmp(get(path_in("full.y4m")), "old y4m"));
    CHECK_EQ_INT(temporaries(), 0);
}

/* The old writer truncated the file at create: a crash mid-video left a
 * short file under the final name. Now the final name changes at close. */
static void test_video_replaced_at_close(void)
{
    const char *p = path_in("v.y4m");
    REQUIRE(put(p, "previous video"));
    pf_video_writer_params wp = pf_video_writer_params_default();
    wp.path = p;
    wp.width = 16;
    wp.height = 16;
    wp.input_format = PF_PIXFMT_GRAY8;
    pf_video_writer *w = NULL;
    CHECK_OK(pf_video_writer_create(&wp, &w));
    REQUIRE(w);
    pf_frame f = {0};
    CHECK_OK(pf_frame_alloc(&f, PF_PIXFMT_GRAY8, 16, 16, NULL, NULL));
    memset(f.data[0], 128, f.stride[0] * 16);
    for (int i = 0; i < 3; i++) CHECK_OK(pf_video_writer_write(w, &f));
    CHECK(!strcmp(get(p), "previous video"));
    CHECK_EQ_INT(temporaries(), 1);
    CHECK_OK(pf_video_writer_close(w));
    pf_video_writer_destroy(&w);
    CHECK(!strncmp(get(p), "YUV4MPEG2 W16 H16", 17));
    CHECK_EQ_INT(temporaries(), 0);
    /* A discarded writer (a failed or cancelled job) leaves the path alone. */
    REQUIRE(put(p, "previous video"));
    CHECK_OK(pf_video_writer_create(&wp, &w));
    REQUIRE(w);
    CHECK_OK(pf_video_writer_write(w, &f));
    pf_video_writer_discard(&w);
    CHECK(w == NULL);
    pf_video_writer_discard(&w);
    CHECK(!strcmp(get(p), "previous video"));
    CHECK_EQ_INT(temporaries(), 0);
    /* A writer that cannot start (bad codec) leaves the old file alone (the
     * old code unlinked the final path). */
    if (pf_io_have_ffmpeg()) {
        const char *m = path_in("keep.mp4");
        REQUIRE(put(m, "keep me"));
        wp.path = m;
        wp.codec = "no-such-codec";
        CHECK(pf_video_writer_create(&wp, &w) != PF_OK);
        CHECK(!strcmp(get(m), "keep me"));
        CHECK_EQ_INT(temporaries(), 0);
        /* FFmpeg writes the temporary by name (its muxer chosen from the kept
         * extension); the MP4 replaces the path at close, not before. */
        wp = pf_video_writer_params_default();
        wp.path = m;
        wp.width = 16;
        wp.height = 16;
        wp.input_format = PF_PIXFMT_GRAY8;
        wp.preset = "ultrafast";
        CHECK_OK(pf_video_writer_create(&wp, &w));
        REQUIRE(w);
        for (int i = 0; i < 3; i++) CHECK_OK(pf_video_writer_write(w, &f));
        CHECK(!strcmp(get(m), "keep me"));
        CHECK_OK(pf_video_writer_close(w));
        pf_video_writer_destroy(&w);
        CHECK(file_size(m) > 100 && strstr(get(m) + 4, "ftyp") == get(m) + 4);
        CHECK_EQ_INT(temporaries(), 0);
    }
    pf_frame_unref(&f);
}

static void test_special_files_in_place(void)
{
    pf_output *o = NULL;
    CHECK_OK(pf_output_open("/dev/null", 0, &o));
    REQUIRE(o);
    CHECK(pf_output_in_place(o));
    CHECK(!strcmp(pf_output_write_path(o), "/dev/null"));
    fputs("x", pf_output_file(o));
    CHECK_OK(pf_output_commit(&o));
    struct stat sb;
    CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
    /* -n does not refuse a device: nothing is replaced. */
    CHECK_OK(pf_output_write_file("/dev/null", "x", 1, PF_OUTPUT_NO_OVERWRITE));
    /* stdout. */
    CHECK_OK(pf_output_open("-", 0, &o));
    CHECK(pf_output_in_place(o) && pf_output_file(o) == stdout);
    CHECK_OK(pf_output_commit(&o));
    /* A FIFO: written through to its reader. */
    const char *fifo = path_in("pipe.y4m");
    REQUIRE(mkfifo(fifo, 0600) == 0);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(fifo, "rb");
        char buf[16] = {0};
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        _exit(n == 5 && !strcmp(buf, "hello") ? 0 : 1);
    }
    CHECK_OK(pf_output_write_file(fifo, "hello", 5, 0));
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    unlink(fifo);
}

static void test_symlink_and_mode_kept(void)
{
    const char *target = path_in("target.txt"), *link = path_in("link.txt");
    REQUIRE(put(target, "old"));
    REQUIRE(chmod(target, 0640) == 0);
    REQUIRE(symlink(target, link) == 0);
    CHECK_OK(pf_output_write_file(link, "new", 3, 0));
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(!strcmp(get(target), "new"));
    CHECK(stat(target, &sb) == 0 && (sb.st_mode & 07777) == 0640);
    CHECK_EQ_INT(temporaries(), 0);
}

static void test_same_file_and_held_inputs(void)
{
    const char *in = path_in("input.mp4"), *hard = path_in("hard.mp4"),
               *soft = path_in("soft.mp4");
    REQUIRE(put(in, "the only copy"));
    REQUIRE(link(in, hard) == 0);
    REQUIRE(symlink(in, soft) == 0);
    char dotted[600];
    snprintf(dotted, sizeof dotted, "%s/./input.mp4", g_dir);
    CHECK(pf_output_same_file(in, hard));
    CHECK(pf_output_same_file(in, soft));
    CHECK(pf_output_same_file(in, dotted));
    CHECK(!pf_output_same_file(in, path_in("none.mp4")));
    CHECK(!pf_output_same_file(in, "-"));
    /* While an input is held (a pipeline source reads it), no output of this
     * process may replace it, whatever name it is given. */
    pf_io_input_hold(in, true);
    pf_output *o = NULL;
    CHECK_EQ_INT(pf_output_open(soft, 0, &o), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "soft.mp4") && strstr(pf_last_error(), "input.mp4"));
    CHECK_EQ_INT(pf_output_write_file(hard, "x", 1, 0), PF_ERR_INVALID);
    CHECK(!strcmp(get(in), "the only copy"));
    pf_io_input_hold(in, false);
    CHECK_OK(pf_output_write_file(hard, "replaced", 8, 0));
    CHECK_EQ_INT(file_size(hard), 8);
}

/* An input deleted (or replaced) while held is still released: the entry
 * is found by its path, not by a new stat (which fails for a deleted file
 * and used to leave the entry, refusing any later output on that inode
 * and leaking its name). A hard link keeps the inode alive to show it. */
static void test_held_input_deleted(void)
{
    char in[512], alias[512], rep[512], old_alias[512], tmp[512];
    snprintf(in, sizeof in, "%s", path_in("gone.mp4"));
    snprintf(alias, sizeof alias, "%s", path_in("gone_alias.mp4"));
    snprintf(rep, sizeof rep, "%s", path_in("replaced.mp4"));
    snprintf(old_alias, sizeof old_alias, "%s", path_in("replaced_old.mp4"));
    snprintf(tmp, sizeof tmp, "%s", path_in("replacement.tmp"));
    REQUIRE(put(in, "read, then deleted"));
    REQUIRE(link(in, alias) == 0);
    pf_io_input_hold(in, true);
    CHECK_EQ_INT(pf_io_check_not_input(alias), PF_ERR_INVALID);
    REQUIRE(unlink(in) == 0);
    pf_io_input_hold(in, false);
    CHECK_OK(pf_io_check_not_input(alias));
    CHECK_OK(pf_output_write_file(alias, "free again", 10, 0));
    /* Replaced by another file under the same name while held. */
    REQUIRE(put(rep, "old"));
    REQUIRE(link(rep, old_alias) == 0);
    pf_io_input_hold(rep, true);
    REQUIRE(put(tmp, "new"));
    REQUIRE(rename(tmp, rep) == 0);
    pf_io_input_hold(rep, false);
    CHECK_OK(pf_io_check_not_input(old_alias));
    CHECK_OK(pf_io_check_not_input(rep));
    /* Two holds, two releases: held until the last. */
    pf_io_input_hold(rep, true);
    pf_io_input_hold(rep, true);
    pf_io_input_hold(rep, false);
    CHECK_EQ_INT(pf_io_check_not_input(rep), PF_ERR_INVALID);
    pf_io_input_hold(rep, false);
    CHECK_OK(pf_io_check_not_input(rep));
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/pf_test_output_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    pf_test_seed(13);
    PF_RUN(test_commit_replaces_only_when_complete);
    PF_RUN(test_abort_keeps_the_old_file);
    PF_RUN(test_errors_name_the_path);
    PF_RUN(test_no_overwrite);
    PF_RUN(test_concurrent_writers_never_mix);
    PF_RUN(test_full_disk_leaves_old_files);
    PF_RUN(test_video_replaced_at_close);
    PF_RUN(test_special_files_in_place);
    PF_RUN(test_symlink_and_mode_kept);
    PF_RUN(test_same_file_and_held_inputs);
    PF_RUN(test_held_input_deleted);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return pf_test_finish();
}
