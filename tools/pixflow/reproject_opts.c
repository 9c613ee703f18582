/* Command line of `pixflow reproject` (see reproject_opts.h). */
#include "reproject_opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RP_DEFAULT_FOV 90.0f
#define RP_DEFAULT_SIZE 1024
#define RP_MAX_SIZE 16384

const cli_option rp_options[] = {
    {"output", "DIR", "output directory (-o; created if missing)"},
    {"view", "Y,P,R,FOV,WxH", "one view: yaw, pitch, roll, fov in degrees, size (repeatable)"},
    {"views", "N[:FOV[:WxH]]", "N views evenly spaced in yaw around the horizon, yaw 0 first"},
    {"cubemap", "SIZE", "six cube faces of SIZE x SIZE"},
    {"cube-layout", "L", "faces (six files, default), 3x2 or 1x6 (one file)"},
    {"format", "FMT", "jpeg (default) or png"},
    {"quality", "Q", "JPEG quality 1..100 (default 90)"},
    {"interp", "I", "bilinear (default) or nearest"},
    {"every", "N", "video: every Nth frame (default 1)"},
    {"list", "FILE", "read more inputs from FILE, one per line"},
    {"device", "SPEC", "auto, cpu, cuda, cuda:N (default $PIXFLOW_DEVICE or auto)"},
    {"json", NULL, "print the summary as one JSON object"},
    {"trace", "FILE", "write a Chrome/Perfetto trace of every stage to FILE"},
    {"quiet", NULL, "no progress line"},
    {"decoders", "N", "decode threads (default: from the core count)"},
    {"encoders", "N", "encode + write threads (default: from the core count)"},
    {"ring", "N", "decoded frames held at once (default: decoders + 4)"},
    {"inflight", "N", "frames on the GPU at once (default 3; 16 with GPU decode)"},
    {"codec", "C", "JPEG decode/encode: auto (default: nvJPEG on a CUDA device where it "
                   "loads), cpu or gpu"},
    {"gpu-decoders", "N", "GPU decode: nvJPEG states (threads) decoding batches (default 2)"},
    {"cpu-assist", "on|off", "GPU decode: decoder threads decode on the CPU while a batch "
                             "waits for the GPU (default on)"},
    CLI_OVERWRITE_OPTIONS,
    {"help", NULL, "show this help"},
    {NULL, NULL, NULL},
};

void rp_usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow reproject INPUT... -o DIR (--view Y,P,R,FOV,WxH... |\n"
            "                         --views N[:FOV[:WxH]] | --cubemap SIZE) [options]\n\n"
            "Reprojects 360-degree equirectangular images (JPEG, PNG) or videos into\n"
            "perspective views or cube maps, one file per view. INPUT is a file, a\n"
            "directory (its .jpg/.jpeg/.png and video files, not recursive) or a quoted\n"
            "glob ('pano/*.jpg'). Decoding, the reprojection, encoding and writing run as\n"
            "a pipeline of threads with bounded buffers (memory does not grow with the\n"
            "number of inputs); the GPU backend overlaps uploads, kernels and downloads.\n\n"
            "output names (docs/reproject.md):\n"
            "  DIR/STEM_viewNN.EXT       --view/--views, NN = 00.. in the order given\n"
            "  DIR/STEM_FACE.EXT         --cubemap, FACE = px nx py ny pz nz\n"
            "  DIR/STEM_cube.EXT         --cubemap with --cube-layout 3x2 or 1x6\n"
            "  DIR/STEM_fNNNNNN_....EXT  video frames (NNNNNN = frame index)\n"
            "  STEM = the input's file name without its extension; EXT = jpg or png\n"
            "Existing files are overwritten (the default, or -y) unless -n is given; each\n"
            "file is written under a temporary name and renamed when complete; an output\n"
            "that is an input is refused before anything is written.\n\n"
            "options:\n");
    cli_print_options(f, rp_options);
    fprintf(f, "\nexit status: 0 every input was reprojected; 1 some input or output failed\n"
               "(each is named on stderr; the others still complete) or the job could not\n"
               "start; 2 bad usage; 130 interrupted (the summary so far is printed)\n");
}

/* Numbers ---------------------------------------------------------------------------- */

static bool parse_int(const char *s, int lo, int hi, int *out)
{
    long v = 0;
    if (!cli_parse_long(s, lo, hi, &v)) return false;
    *out = (int)v;
    return true;
}

static bool parse_float(const char *s, size_t len, float *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || end == buf || *end || !isfinite(v) || fabs(v) > 1e6) return false;
    *out = (float)v;
    return true;
}

static bool parse_size(const char *s, size_t len, int *w, int *h)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *x = strchr(buf, 'x');
    if (!x) return false;
    *x = '\0';
    return parse_int(buf, 1, RP_MAX_SIZE, w) && parse_int(x + 1, 1, RP_MAX_SIZE, h);
}

bool rp_parse_view(const char *s, pf_view *v, char *err, size_t err_size)
{
    const char *field[5];
    size_t len[5];
    int n = 0;
    for (const char *p = s;; n++) {
        const char *c = strchr(p, ',');
        if (n < 5) {
            field[n] = p;
            len[n] = c ? (size_t)(c - p) : strlen(p);
        }
        if (!c) break;
        p = c + 1;
    }
    if (n != 4) {
        snprintf(err, err_size, "expected 5 fields yaw,pitch,roll,fov,WxH");
        return false;
    }
    static const char *const names[4] = {"yaw", "pitch", "roll", "fov"};
    float a[4];
    for (int i = 0; i < 4; i++)
        if (!parse_float(field[i], len[i], &a[i])) {
            snprintf(err, err_size, "%s '%.*s' is not a finite number", names[i], (int)len[i],
                     field[i]);
            return false;
        }
    if (!(a[3] > 0.0f && a[3] < 180.0f)) {
        snprintf(err, err_size, "fov %g is outside (0, 180) degrees", (double)a[3]);
        return false;
    }
    int w, h;
    if (!parse_size(field[4], len[4], &w, &h)) {
        snprintf(err, err_size, "size '%.*s' is not WxH with 1..%d pixels each", (int)len[4],
                 field[4], RP_MAX_SIZE);
        return false;
    }
    *v = (pf_view){.yaw = a[0], .pitch = a[1], .roll = a[2], .fov = a[3], .width = w,
                   .height = h};
    return true;
}

bool rp_parse_views(const char *s, int *n, float *fov, int *w, int *h, char *err,
                    size_t err_size)
{
    *fov = RP_DEFAULT_FOV;
    *w = *h = RP_DEFAULT_SIZE;
    const char *c1 = strchr(s, ':');
    char buf[32];
    size_t l0 = c1 ? (size_t)(c1 - s) : strlen(s);
    if (l0 == 0 || l0 >= sizeof buf) goto bad_n;
    memcpy(buf, s, l0);
    buf[l0] = '\0';
    if (!parse_int(buf, 1, RP_MAX_OUTPUTS, n)) goto bad_n;
    if (!c1) return true;
    const char *c2 = strchr(c1 + 1, ':');
    size_t l1 = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
    if (!parse_float(c1 + 1, l1, fov) || !(*fov > 0.0f && *fov < 180.0f)) {
        snprintf(err, err_size, "fov '%.*s' is not a number in (0, 180)", (int)l1, c1 + 1);
        return false;
    }
    if (!c2) return true;
    if (!parse_size(c2 + 1, strlen(c2 + 1), w, h)) {
        snprintf(err, err_size, "size '%s' is not WxH with 1..%d pixels each", c2 + 1,
                 RP_MAX_SIZE);
        return false;
    }
    return true;
bad_n:
    snprintf(err, err_size, "N must be 1..%d", RP_MAX_OUTPUTS);
    return false;
}

/* Parsing ---------------------------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "pixflow reproject: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see 'pixflow reproject --help')\n");
    return CLI_EXIT_USAGE;
}

static bool add_view(rp_config *c, const pf_view *v)
{
    if (c->num_views == RP_MAX_OUTPUTS) return false;
    c->views[c->num_views++] = *v;
    return true;
}

/* One option with its value; returns CLI_EXIT_OK or a usage error. */
static int apply_option(rp_config *c, const char *name, const char *val, bool *views_seen,
                        bool *cube_seen, const char **cube_layout)
{
    char err[160];
    if (!strcmp(name, "output")) {
        c->p.output_dir = val;
    } else if (!strcmp(name, "view")) {
        pf_view v;
        if (!rp_parse_view(val, &v, err, sizeof err))
            return usage_error("--view '%s': %s", val, err);
        if (!add_view(c, &v))
            return usage_error("--view '%s': more than %s views", val, "64");
        *views_seen = true;
    } else if (!strcmp(name, "views")) {
        int n, w, h;
        float fov;
        if (!rp_parse_views(val, &n, &fov, &w, &h, err, sizeof err))
            return usage_error("--views '%s': %s", val, err);
        for (int k = 0; k < n; k++) {
            pf_view v = {.yaw = (float)(360.0 * k / n), .fov = fov, .width = w, .height = h};
            if (!add_view(c, &v))
                return usage_error("--views '%s': more than %s views in all", val, "64");
        }
        *views_seen = true;
    } else if (!strcmp(name, "cubemap")) {
        if (!parse_int(val, 1, RP_MAX_SIZE, &c->p.cube_size))
            return usage_error("--cubemap '%s': expected a face size 1..%s", val, "16384");
        *cube_seen = true;
    } else if (!strcmp(name, "cube-layout")) {
        *cube_layout = val;
    } else if (!strcmp(name, "format")) {
        if (!strcmp(val, "jpeg") || !strcmp(val, "jpg")) {
            c->p.format = PF_IMAGE_JPEG;
        } else if (!strcmp(val, "png")) {
            c->p.format = PF_IMAGE_PNG;
        } else {
            return usage_error("--format '%s': expected jpeg or png%s", val, "");
        }
    } else if (!strcmp(name, "quality")) {
        if (!parse_int(val, 1, 100, &c->p.quality))
            return usage_error("--quality '%s': expected 1..100%s", val, "");
    } else if (!strcmp(name, "interp")) {
        if (!strcmp(val, "bilinear")) c->p.interp = PF_INTERP_BILINEAR;
        else if (!strcmp(val, "nearest")) c->p.interp = PF_INTERP_NEAREST;
        else return usage_error("--interp '%s': expected bilinear or nearest%s", val, "");
    } else if (!strcmp(name, "every")) {
        if (!parse_int(val, 1, 1000000, &c->p.every))
            return usage_error("--every '%s': expected a positive integer%s", val, "");
    } else if (!strcmp(name, "list")) {
        c->p.list = val;
    } else if (!strcmp(name, "device")) {
        c->device = val;
    } else if (!strcmp(name, "codec")) {
        if (!strcmp(val, "auto")) c->p.codec = PF_REPROJECT_CODEC_AUTO;
        else if (!strcmp(val, "cpu")) c->p.codec = PF_REPROJECT_CODEC_CPU;
        else if (!strcmp(val, "gpu")) c->p.codec = PF_REPROJECT_CODEC_GPU;
        else return usage_error("--codec '%s': expected auto, cpu or gpu%s", val, "");
    } else if (!strcmp(name, "gpu-decoders")) {
        if (!parse_int(val, 1, 16, &c->p.gpu_decoders))
            return usage_error("--gpu-decoders '%s': expected 1..16%s", val, "");
    } else if (!strcmp(name, "cpu-assist")) {
        if (!strcmp(val, "on")) c->p.no_cpu_assist = false;
        else if (!strcmp(val, "off")) c->p.no_cpu_assist = true;
        else return usage_error("--cpu-assist '%s': expected on or off%s", val, "");
    } else if (!strcmp(name, "trace")) {
        c->p.trace = val;
    } else if (!strcmp(name, "decoders") || !strcmp(name, "encoders") ||
               !strcmp(name, "ring") || !strcmp(name, "inflight")) {
        int v;
        if (!parse_int(val, 1, 256, &v))
            return usage_error("--%s '%s': expected 1..256", name, val);
        if (name[0] == 'd') c->p.decoders = v;
        else if (name[0] == 'e') c->p.encoders = v;
        else if (name[0] == 'r') c->p.ring = v;
        else c->p.inflight = v;
    }
    return CLI_EXIT_OK;
}

static int finish_outputs(rp_config *c, bool views_seen, bool cube_seen, const char *layout)
{
    if (views_seen && cube_seen)
        return usage_error("--cubemap cannot be combined with --view/--views%s%s", "", "");
    if (!views_seen && !cube_seen)
        return usage_error("nothing to produce: give --view, --views or --cubemap%s%s", "", "");
    if (layout && !cube_seen)
        return usage_error("--cube-layout '%s' needs --cubemap%s", layout, "");
    if (views_seen) {
        c->p.cube = PF_REPROJECT_NO_CUBE;
        c->p.views = c->views;
        c->p.num_views = c->num_views;
        return CLI_EXIT_OK;
    }
    if (!layout || !strcmp(layout, "faces")) {
        c->p.cube = PF_REPROJECT_CUBE_FACES;
        return CLI_EXIT_OK;
    }
    if (strcmp(layout, "3x2") && strcmp(layout, "1x6"))
        return usage_error("--cube-layout '%s': expected faces, 3x2 or 1x6%s", layout, "");
    bool wide = !strcmp(layout, "3x2");
    c->p.cube = wide ? PF_REPROJECT_CUBE_3X2 : PF_REPROJECT_CUBE_1X6;
    if ((wide ? 2 : 6) * c->p.cube_size > RP_MAX_SIZE)
        return usage_error("--cubemap %s with --cube-layout %s is over 16384 pixels high",
                           wide ? "3x2" : "1x6", "");
    return CLI_EXIT_OK;
}

int rp_config_parse(int argc, char **argv, rp_config *c, bool *help)
{
    memset(c, 0, sizeof *c);
    c->p = pf_reproject_params_default();
    *help = false;
    c->inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *c->inputs);
    if (!c->inputs) {
        fprintf(stderr, "pixflow reproject: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    bool views_seen = false, cube_seen = false, only_positional = false;
    bool overwrite_yes = false, overwrite_no = false;
    const char *layout = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            c->inputs[c->num_inputs++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_positional = true;
            continue;
        }
        const char *name, *eq = NULL;
        size_t len;
        char namebuf[32];
        if (!strcmp(arg, "-h")) {
            name = "help";
        } else if (!strcmp(arg, "-o")) {
            name = "output";
        } else if (!strcmp(arg, "-y")) {
            name = "overwrite";
        } else if (!strcmp(arg, "-n")) {
            name = "no-overwrite";
        } else if (arg[1] == '-') {
            eq = strchr(arg + 2, '=');
            len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
            if (len >= sizeof namebuf) return usage_error("unknown option '%s'%s", arg, "");
            memcpy(namebuf, arg + 2, len);
            namebuf[len] = '\0';
            name = namebuf;
        } else {
            return usage_error("unknown option '%s'%s", arg, "");
        }
        int idx = cli_option_index(rp_options, name);
        if (idx < 0) return usage_error("unknown option '%s'%s", arg, "");
        const cli_option *o = &rp_options[idx];
        if (!o->metavar) {
            if (eq) return usage_error("option --%s takes no value (got '%s')", o->name, eq + 1);
            if (!strcmp(name, "help")) *help = true;
            else if (!strcmp(name, "json")) c->json = true;
            else if (!strcmp(name, "quiet")) c->quiet = true;
            else if (!strcmp(name, "overwrite")) overwrite_yes = true;
            else if (!strcmp(name, "no-overwrite")) overwrite_no = true;
            continue;
        }
        const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!val) return usage_error("option --%s needs a value (%s)", o->name, o->metavar);
        if (!val[0]) return usage_error("option --%s needs a non-empty value (%s)", o->name,
                                        o->metavar);
        int rc = apply_option(c, o->name, val, &views_seen, &cube_seen, &layout);
        if (rc != CLI_EXIT_OK) return rc;
    }
    if (*help) return CLI_EXIT_OK;
    if (overwrite_yes && overwrite_no)
        return usage_error("-y (overwrite) and -n (never overwrite) contradict each other%s%s",
                           "", "");
    pf_output_set_default_flags(overwrite_no ? PF_OUTPUT_NO_OVERWRITE : 0);
    c->p.no_overwrite = overwrite_no;
    int rc = finish_outputs(c, views_seen, cube_seen, layout);
    if (rc != CLI_EXIT_OK) return rc;
    if (!c->p.output_dir) return usage_error("no output directory: give -o DIR%s%s", "", "");
    c->p.inputs = c->inputs;
    c->p.num_inputs = c->num_inputs;
    if (c->num_inputs == 0 && !c->p.list)
        return usage_error("no input: give files, directories, globs or --list FILE%s%s", "",
                           "");
    return CLI_EXIT_OK;
}

void rp_config_free(rp_config *c)
{
    free(c->inputs);
    c->inputs = NULL;
}
