/* The thread-local error message and the log level from the environment.
 *
 * A message built from pf_last_error() must come out exact: pf_set_error() once formatted
 * straight into the slot its argument pointed into (undefined behaviour; glibc overwrote the
 * message while reading it). An unknown PIXFLOW_LOG once recursed without end
 * (pf_log_get_level -> pf_log_level_parse -> pf_set_error -> pf_log -> pf_log_get_level):
 * here it must fall back to 'warn'. The environment is set before the library first reads it. */
#include <stdlib.h>

#include "core/error.h"
#include "pf_test.h"

static void test_set_error_from_last_error(void)
{
    pf_set_error(PF_ERR_IO, "cannot open 'a.png': No such file or directory");
    CHECK_EQ_INT(pf_set_error(PF_ERR_IO, "io.image_source: %s", pf_last_error()), PF_ERR_IO);
    CHECK(!strcmp(pf_last_error(),
                  "io.image_source: cannot open 'a.png': No such file or directory"));
    /* The same argument twice, and after a longer prefix than the message itself. */
    pf_set_error(PF_ERR_FORMAT, "bad");
    pf_set_error(PF_ERR_FORMAT, "a much longer prefix than the message [%s|%s]", pf_last_error(),
                 pf_last_error());
    CHECK(!strcmp(pf_last_error(), "a much longer prefix than the message [bad|bad]"));
}

static void test_set_error_long_message(void)
{
    char big[1100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    pf_set_error(PF_ERR_INVALID, "%s", big); /* truncated to the slot */
    size_t n = strlen(pf_last_error());
    CHECK(n > 900 && n < sizeof big);
    pf_set_error(PF_ERR_INVALID, "p: %s", pf_last_error());
    const char *m = pf_last_error();
    CHECK(!strncmp(m, "p: ", 3));
    CHECK_EQ_INT(strlen(m), n); /* truncated again, never overrun */
    CHECK(strspn(m + 3, "x") == n - 3);
}

static void test_error_prefix(void)
{
    pf_set_error(PF_ERR_NOMEM, "cannot allocate 12 MiB");
    CHECK_EQ_INT(pf_error_prefix(PF_ERR_NOMEM, "%s", "in.png"), PF_ERR_NOMEM);
    CHECK(!strcmp(pf_last_error(), "in.png: cannot allocate 12 MiB"));
    pf_error_prefix(PF_ERR_NOMEM, "stage '%s'", "src");
    CHECK(!strcmp(pf_last_error(), "stage 'src': in.png: cannot allocate 12 MiB"));
}

/* A log callback that itself sets errors and logs must neither recurse nor deadlock. */
static int cb_calls;
static void reentrant_cb(void *user, pf_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    (void)msg;
    cb_calls++;
    pf_set_error(PF_ERR_INTERNAL, "from the callback: %s", pf_last_error());
    pf_log(PF_LOG_ERROR, "nested");
}

static void test_log_callback_reentry(void)
{
    pf_log_level old = pf_log_get_level();
    pf_log_set_level(PF_LOG_DEBUG);
    pf_log_set_callback(reentrant_cb, NULL);
    cb_calls = 0;
    pf_set_error(PF_ERR_INVALID, "outer"); /* logs at debug -> callback -> set_error -> log */
    pf_log_set_callback(NULL, NULL);
    pf_log_set_level(old);
    CHECK_EQ_INT(cb_calls, 1);
}

/* First read of the level, with a value that is no level. Before the fix: stack overflow. */
static void test_bad_pixflow_log(void)
{
    setenv("PIXFLOW_LOG", "verbose", 1);
    CHECK_EQ_INT(pf_log_get_level(), PF_LOG_WARN);
    pf_log_level lv = PF_LOG_TRACE;
    CHECK_EQ_INT(pf_log_level_parse("verbose", &lv), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "'verbose'") != NULL);
    CHECK_EQ_INT(lv, PF_LOG_TRACE);
}

int main(void)
{
    PF_RUN(test_bad_pixflow_log); /* first: nothing may have read PIXFLOW_LOG before */
    PF_RUN(test_set_error_from_last_error);
    PF_RUN(test_set_error_long_message);
    PF_RUN(test_error_prefix);
    PF_RUN(test_log_callback_reentry);
    return pf_test_finish();
}
