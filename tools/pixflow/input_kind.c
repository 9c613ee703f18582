/* Input classification for the CLI (see input_kind.h). */
#define _POSIX_C_SOURCE 200809L

#include "input_kind.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "pixflow/io.h"

bool cli_image_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                   !strcasecmp(dot, ".jpeg"));
}

/* PNG's 8-byte signature or JPEG's SOI followed by a marker. */
static bool image_signature(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    unsigned char b[8] = {0};
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return (n == 8 && !memcmp(b, png, 8)) || (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff);
}

cli_input_kind cli_input_classify(const char *path, bool *once)
{
    if (once) *once = false;
    if (!strcmp(path, "-")) {
        if (once) *once = true;
        return CLI_INPUT_VIDEO;
    }
    /* A URL (network stream) and a V4L2 camera are live videos the
     * reader opens through libavformat: never stat'ed or sniffed here
     * (a missing camera gets the reader's own message). */
    if (pf_io_is_url(path) || pf_io_is_camera(path)) {
        if (once) *once = true;
        return CLI_INPUT_VIDEO;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return CLI_INPUT_MISSING;
    if (S_ISDIR(sb.st_mode)) return CLI_INPUT_DIR;
    if (!S_ISREG(sb.st_mode)) {
        if (once) *once = true;
        return cli_image_name(path) ? CLI_INPUT_IMAGE : CLI_INPUT_VIDEO;
    }
    return image_signature(path) || cli_image_name(path) ? CLI_INPUT_IMAGE : CLI_INPUT_VIDEO;
}
