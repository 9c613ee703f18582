/* Private: redaction of URLs inside free text (url.c), for FFmpeg's log
 * lines, which name the URL they failed on, credentials included; the
 * muxer a network output gets from its scheme. */
#ifndef PF_IO_URL_H
#define PF_IO_URL_H

#include <stddef.h>

/* `text` with every "scheme://..." in it passed through pf_io_redact, into
 * buf (NUL-terminated, truncated to size). */
void pf_io_redact_text(const char *text, char *buf, size_t size);

/* The libavformat muxer for an output URL of `scheme` (lower case):
 * "mpegts" for udp, tcp, srt; "rtp_mpegts" for rtp; "rtsp"; "flv" for rtmp
 * and rtmps; NULL for others (FFmpeg guesses, or the caller refuses). */
const char *pf_io_url_muxer(const char *scheme);

#endif
