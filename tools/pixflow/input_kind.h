/* What a command-line input names, for `pixflow segment` and `pixflow
 * reproject`: told by what the path is (stat) and, for a regular file, by
 * its first bytes before its extension, so a PNG or JPEG is always read as
 * an image (and gets the image reader's exact message when it is damaged,
 * empty or too large) whatever its name, and anything else is a video.
 * Inputs that can be read only once (a FIFO, /dev/stdin, /dev/fd/N of a
 * process substitution, a character device, "-") are never opened here:
 * an image extension makes them an image, anything else a video stream
 * that the video reader sniffs itself (Y4M or a container for FFmpeg).
 * A URL ("rtsp://...", pf_io_is_url) and a V4L2 camera ("/dev/videoN")
 * are live videos, read once, never touched here. */
#ifndef PF_TOOLS_INPUT_KIND_H
#define PF_TOOLS_INPUT_KIND_H

#include <stdbool.h>

typedef enum cli_input_kind {
    CLI_INPUT_MISSING = 0,  /* stat failed (errno tells why) */
    CLI_INPUT_DIR,
    CLI_INPUT_IMAGE,        /* PNG/JPEG signature, or an image extension */
    CLI_INPUT_VIDEO         /* anything else (a regular file, a stream, a URL, a camera) */
} cli_input_kind;

/* Classifies `path` (may read its first 8 bytes when it is a regular
 * file). *once (may be NULL): the input can be read only once (not a
 * regular file): probe it with nothing that reads. */
cli_input_kind cli_input_classify(const char *path, bool *once);

/* Whether the name ends in .png, .jpg or .jpeg (any case). */
bool cli_image_name(const char *path);

#endif
