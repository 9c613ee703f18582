/* Private: helpers shared by the FFmpeg decoder and encoder (included only
 * when PF_HAVE_FFMPEG is defined). */
#ifndef PF_IO_FFMPEG_UTIL_H
#define PF_IO_FFMPEG_UTIL_H

#include <libavutil/pixfmt.h>

#include "pixflow/frame.h"

/* The FFmpeg pixel format with pixflow's layout (AV_PIX_FMT_NONE if none). */
enum AVPixelFormat pf_ff_pixfmt(pf_pixfmt f);
/* Routes FFmpeg's log to pixflow's (debug level) once per process. */
void pf_ff_init_log(void);
/* "NAME: WHAT: av_strerror(err) (FFmpeg: [component] its last logged error)"
 * as the last error (the part in parentheses when FFmpeg logged an error on
 * this thread since pf_ff_log_reset); returns st. */
pf_status pf_ff_fail(pf_status st, const char *name, const char *what, int err);
/* Forgets the error FFmpeg logged last on this thread: call before a call
 * whose failure pf_ff_fail will report. */
void pf_ff_log_reset(void);

#endif
