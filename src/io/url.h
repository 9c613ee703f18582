/* Private: redaction of URLs inside free text (url.c), for FFmpeg's log
 * lines, which name the URL they failed on, credentials included. */
#ifndef PF_IO_URL_H
#define PF_IO_URL_H

#include <stddef.h>

/* `text` with every "scheme://..." in it passed through pf_io_redact, into
 * buf (NUL-terminated, truncated to size). */
void pf_io_redact_text(const char *text, char *buf, size_t size);

#endif
