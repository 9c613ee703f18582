/* `pixflow reproject`: the command line, parsed into one configuration.
 *
 * cli_parse() keeps the last value of a repeated option and at most 16
 * positional arguments; reproject takes --view many times and thousands of
 * inputs (a shell glob), so it parses argv itself against the same
 * cli_option table (which also prints --help). */
#ifndef PF_TOOLS_REPROJECT_OPTS_H
#define PF_TOOLS_REPROJECT_OPTS_H

#include <stdbool.h>

#include "cli.h"
#include "pixflow/pixflow.h"

#define RP_MAX_OUTPUTS PF_REPROJECT_MAX_VIEWS

/* The command line: the job's params (pf_reproject_params) and what the
 * command does itself. */
typedef struct rp_config {
    pf_reproject_params p;           /* views, inputs and list point into this and argv */
    pf_view views[RP_MAX_OUTPUTS];   /* --view / --views in the order given */
    int num_views;
    const char *device;              /* NULL = $PIXFLOW_DEVICE / auto */
    bool json, quiet;
    const char **inputs;             /* positional arguments (borrowed from argv) */
    int num_inputs;
} rp_config;

extern const cli_option rp_options[];

void rp_usage(FILE *f);

/* Parses argv[1..argc) into *cfg (inputs point into argv; free with
 * rp_config_free). Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing
 * the reason; *help is set when --help was asked for. */
int rp_config_parse(int argc, char **argv, rp_config *cfg, bool *help);
void rp_config_free(rp_config *cfg);

/* "yaw,pitch,roll,fov,WxH" -> *v; false with a reason in err. */
bool rp_parse_view(const char *s, pf_view *v, char *err, size_t err_size);
/* "N[:fov[:WxH]]" -> n views around the horizon. */
bool rp_parse_views(const char *s, int *n, float *fov, int *w, int *h, char *err,
                    size_t err_size);

#endif
