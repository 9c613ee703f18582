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
#include "pixflow/io.h" /* not (yet) in pixflow.h */
#include "pixflow/pixflow.h"

#define RP_MAX_OUTPUTS 64  /* pf_ops_equirect_to_views takes 64 views per call */

/* What each input frame turns into. */
typedef enum rp_mode {
    RP_MODE_VIEWS = 0,     /* --view / --views: one file per view */
    RP_MODE_CUBE_FACES,    /* --cubemap: six face files */
    RP_MODE_CUBE_MOSAIC    /* --cubemap with --cube-layout 3x2|1x6: one file */
} rp_mode;

typedef struct rp_config {
    rp_mode mode;
    int num_outputs;                 /* files per input frame */
    pf_view views[RP_MAX_OUTPUTS];   /* VIEWS and CUBE_FACES */
    char suffix[RP_MAX_OUTPUTS][8];  /* file name part per output: view00, px, cube */
    int out_width[RP_MAX_OUTPUTS], out_height[RP_MAX_OUTPUTS];
    int cube_size;
    pf_cube_layout cube_layout;      /* CUBE_MOSAIC */
    pf_interp interp;

    const char *out_dir;
    pf_image_format format;          /* PNG or JPEG */
    const char *ext;                 /* "jpg" or "png" */
    int quality;                     /* JPEG 1..100 */
    int every;                       /* video: every Nth frame, >= 1 */

    const char *device;              /* NULL = $PIXFLOW_DEVICE / auto */
    const char *trace_path;
    bool json, quiet;
    int decoders, encoders;          /* 0 = from the core count */
    int ring;                        /* decoded frames held at once; 0 = auto */
    int inflight;                    /* frames on the GPU at once; 0 = auto */

    const char **inputs;             /* positional arguments (borrowed from argv) */
    int num_inputs;
    const char *list_path;           /* --list FILE: more inputs, one per line */
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
