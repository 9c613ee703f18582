/* Small helpers shared by the pixflow commands: option parsing, JSON output
 * (over the library's writer) and byte formatting. The CLI uses only the public API
 * (include/pixflow/); nothing here reaches into src/. */
#ifndef PF_TOOLS_CLI_H
#define PF_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pixflow/core.h"

/* Exit codes of every command. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1   /* the work failed (device missing, check failed, I/O) */
#define CLI_EXIT_USAGE 2  /* bad command line */

/* A command: `run` gets argv[0] = the command's name, and returns an exit code. */
typedef struct cli_command {
    const char *name;
    const char *summary;   /* one line for `pixflow --help` */
    int (*run)(int argc, char **argv);
} cli_command;

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_reproject(int argc, char **argv);
int cmd_segment(int argc, char **argv);
int cmd_faces(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_ops(int argc, char **argv);
int cmd_bench_segment(int argc, char **argv);
int cmd_bench_reproject(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_worker(int argc, char **argv);

/* Option parsing ------------------------------------------------------------------
 *
 * Accepts --flag, --name=value and --name value; "-h" is --help, "-o" is
 * --output where the table has it; "--" ends the
 * options. Anything not starting with '-' (and everything after "--") is a
 * positional argument. A repeated option keeps its last value. */

#define CLI_MAX_OPTIONS 32
#define CLI_MAX_POSITIONAL 4096 /* inputs of one run (cameras of a multi-stream segment) */

typedef struct cli_option {
    const char *name;      /* without dashes: "device" */
    const char *metavar;   /* NULL for a flag; else the value's name: "SPEC" */
    const char *help;      /* one line */
} cli_option;

typedef struct cli_args {
    bool set[CLI_MAX_OPTIONS];          /* by index into the option table */
    const char *value[CLI_MAX_OPTIONS]; /* value options only */
    const char *positional[CLI_MAX_POSITIONAL];
    int positional_count;
} cli_args;

/* Parses argv[1..argc) (argv[0] is the command's name) against `opts`
 * (terminated by an entry with name NULL). On a bad command line prints
 * "pixflow CMD: ..." and a pointer to --help on stderr and returns false. */
bool cli_parse(const char *cmd, const cli_option *opts, int argc, char **argv, cli_args *out);

/* Index of option `name` in `opts`, or -1. */
int cli_option_index(const cli_option *opts, const char *name);
bool cli_flag(const cli_option *opts, const cli_args *a, const char *name);
/* The option's value, or NULL when it was not given. */
const char *cli_value(const cli_option *opts, const cli_args *a, const char *name);

/* A whole decimal integer in lo..hi (no sign tricks, no trailing text, no
 * overflow) into *out; false otherwise. */
bool cli_parse_long(const char *s, long lo, long hi, long *out);

/* Prints an aligned option list ("  --device SPEC   help"). */
void cli_print_options(FILE *f, const cli_option *opts);

/* JSON ----------------------------------------------------------------------------
 *
 * Thin wrappers over the library's JSON writer (pf_json_writer, pixflow/core.h)
 * in its indented style with doubles as %.6g: the same bytes every command
 * printed before the library had one writer. cli_json_finish ends the
 * document with a newline and frees the writer: call it on every path after
 * cli_json_init. */

typedef struct cli_json {
    pf_json_writer *w; /* NULL when it could not be created: every call is a no-op */
} cli_json;

void cli_json_init(cli_json *j, FILE *f);
void cli_json_object_begin(cli_json *j, const char *key);
void cli_json_object_end(cli_json *j);
void cli_json_array_begin(cli_json *j, const char *key);
void cli_json_array_end(cli_json *j);
void cli_json_string(cli_json *j, const char *key, const char *value); /* NULL -> null */
void cli_json_int(cli_json *j, const char *key, long long value);
void cli_json_uint(cli_json *j, const char *key, unsigned long long value);
void cli_json_double(cli_json *j, const char *key, double value);
void cli_json_bool(cli_json *j, const char *key, bool value);
void cli_json_null(cli_json *j, const char *key);
/* Ends the document with a newline, flushes, frees the writer. */
void cli_json_finish(cli_json *j);

/* Writes `s` as a JSON string literal, quotes included. */
void cli_json_write_escaped(FILE *f, const char *s);

/* Formatting ---------------------------------------------------------------------- */

/* "0 B", "512 B", "1.50 KiB", "23.54 GiB" (binary units); returns buf. */
const char *cli_fmt_bytes(char *buf, size_t size, uint64_t bytes);

/* Ctrl-C (SIGINT) and SIGTERM during a long job: the first signal sets the
 * interrupted flag and calls cancel(arg), which must be async-signal-safe
 * (pf_pipeline_cancel_async is). Later signals (a second Ctrl-C, GNU
 * timeout's signal to the child and then to its process group) are
 * acknowledged on stderr and do not kill: the job is finishing its outputs
 * (a video's trailer, the rename into place) and printing its summary.
 * SIGKILL still ends it. cli_signals_restore() forgets cancel/arg but keeps
 * acknowledging, since outputs are finalized after the wait returns; the
 * process exits soon after. SIGXFSZ is ignored from install on, so a file
 * size limit is a write error (EFBIG) named by the output, not a kill. One
 * job at a time. */
void cli_signals_install(void (*cancel)(void *arg), void *arg);
void cli_signals_restore(void);
bool cli_interrupted(void);

/* Outputs -------------------------------------------------------------------------------
 *
 * Overwrite control like ffmpeg's: -y overwrites without asking, -n never
 * overwrites (an existing output is an error naming it, checked before work
 * starts and again atomically when each output is renamed into place);
 * neither keeps the default, overwrite. cli_parse maps "-y" to --overwrite
 * and "-n" to --no-overwrite when the table has them: put CLI_OVERWRITE_OPTIONS
 * in a command's option table. */
#define CLI_OVERWRITE_OPTIONS \
    {"overwrite", NULL, "(-y) overwrite existing outputs without asking (the default)"}, \
    {"no-overwrite", NULL, "(-n) never overwrite an existing output: exit with an error"}

/* Applies -y/-n (pf_output_set_default_flags for -n). False, with a usage
 * message, when both are given. */
bool cli_overwrite_setup(const char *cmd, const cli_option *opts, const cli_args *a);
/* With -n: false, printing "pixflow CMD: PATH: already exists", when `path`
 * exists ("-" and special files such as /dev/null are always writable). */
bool cli_output_may_write(const char *cmd, const char *path);

#endif
