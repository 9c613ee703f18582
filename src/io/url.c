/* Inputs that are not files: URLs (network streams through libavformat)
 * and V4L2 cameras. Classification and credential redaction live here so
 * that every place that prints an input's name (reader messages, stage
 * logs, the CLI) shows the same redacted text. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pixflow/io.h"
#include "url.h"

/* Length of the scheme of "scheme://...", 0 when `path` is not a URL. A
 * scheme is a letter then letters, digits, '+', '-', '.' (RFC 3986); one
 * letter is refused so that "C://x" style paths stay files. */
static size_t scheme_len(const char *path)
{
    if (!path || !isalpha((unsigned char)path[0])) return 0;
    size_t n = 1;
    while (isalnum((unsigned char)path[n]) || path[n] == '+' || path[n] == '-' || path[n] == '.')
        n++;
    return n >= 2 && strncmp(path + n, "://", 3) == 0 ? n : 0;
}

bool pf_io_is_url(const char *path)
{
    return scheme_len(path) > 0;
}

bool pf_io_url_scheme(const char *path, char *buf, size_t size)
{
    size_t n = scheme_len(path);
    if (!n || !buf || size == 0) {
        if (buf && size) buf[0] = '\0';
        return n > 0;
    }
    size_t k = n < size - 1 ? n : size - 1;
    for (size_t i = 0; i < k; i++) buf[i] = (char)tolower((unsigned char)path[i]);
    buf[k] = '\0';
    return true;
}

bool pf_io_is_camera(const char *path)
{
    if (!path || strncmp(path, "/dev/video", 10) != 0) return false;
    const char *p = path + 10;
    if (!isdigit((unsigned char)*p)) return false;
    while (isdigit((unsigned char)*p)) p++;
    return *p == '\0';
}

bool pf_io_is_live(const char *path)
{
    char scheme[16];
    if (pf_io_url_scheme(path, scheme, sizeof scheme))
        return strcmp(scheme, "file") != 0 && strcmp(scheme, "pipe") != 0;
    return pf_io_is_camera(path);
}

bool pf_io_protocol_allowed(const char *list, const char *scheme)
{
    if (!list) list = PF_IO_DEFAULT_PROTOCOLS;
    size_t n = strlen(scheme);
    if (!n) return false;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && strncasecmp(p, scheme, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* Query parameters whose value is a secret (SRT's passphrase, tokens). */
static bool secret_param(const char *name, size_t n)
{
    static const char *const names[] = {"passphrase", "password", "passwd", "pass", "pwd",
                                        "key",        "token",    "secret", "auth", NULL};
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && strncasecmp(names[i], name, n) == 0) return true;
    return false;
}

/* Appends src[0..n) to buf at *at (truncating at size - 1). */
static void put(char *buf, size_t size, size_t *at, const char *src, size_t n)
{
    for (size_t i = 0; i < n && *at + 1 < size; i++) buf[(*at)++] = src[i];
    buf[*at] = '\0';
}

const char *pf_io_redact(const char *path, char *buf, size_t size)
{
    if (!buf || size == 0) return "";
    buf[0] = '\0';
    if (!path) return buf;
    size_t s = scheme_len(path), at = 0;
    if (!s) {
        snprintf(buf, size, "%s", path);
        return buf;
    }
    /* The authority runs from after "://" to the first '/', '?' or '#';
     * credentials are what comes before its last '@'. */
    const char *auth = path + s + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *cred_end = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@') cred_end = auth + i;
    put(buf, size, &at, path, s + 3);
    if (cred_end) {
        /* "user:***@host": the user name is kept (it tells which account);
         * a password is never shown, not even whether there was one. */
        size_t ulen = strcspn(auth, ":@");
        if (auth + ulen > cred_end) ulen = (size_t)(cred_end - auth);
        put(buf, size, &at, auth, ulen);
        put(buf, size, &at, ":***", 4);
        put(buf, size, &at, cred_end, (size_t)(auth + alen - cred_end));
    } else {
        put(buf, size, &at, auth, alen);
    }
    /* Path, then the query with secret values replaced. */
    const char *p = auth + alen;
    bool in_query = false;
    while (*p) {
        if (*p == '#') {
            put(buf, size, &at, p, strlen(p));
            break;
        }
        if (*p == '?' || (in_query && *p == '&')) {
            in_query = true;
            put(buf, size, &at, p, 1);
            p++;
            size_t name = strcspn(p, "=&#");
            put(buf, size, &at, p, name);
            if (p[name] == '=' && secret_param(p, name)) {
                put(buf, size, &at, "=***", 4);
                p += name + 1;
                p += strcspn(p, "&#");
            } else {
                p += name;
            }
            continue;
        }
        put(buf, size, &at, p, 1);
        p++;
    }
    return buf;
}

void pf_io_redact_text(const char *text, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    size_t at = 0;
    buf[0] = '\0';
    for (const char *p = text ? text : ""; *p;) {
        bool start = p == text || !isalnum((unsigned char)p[-1]);
        if (start && scheme_len(p)) {
            /* A URL inside a message runs to the next space or quote. */
            size_t n = strcspn(p, " \t\r\n'\"<>");
            char url[1024], shown[1024];
            snprintf(url, sizeof url, "%.*s", (int)(n < sizeof url ? n : sizeof url - 1), p);
            pf_io_redact(url, shown, sizeof shown);
            put(buf, size, &at, shown, strlen(shown));
            p += n;
            continue;
        }
        put(buf, size, &at, p, 1);
        p++;
    }
}

const char *pf_io_url_name(const char *url, char *buf, size_t size)
{
    if (!buf || size == 0) return "";
    buf[0] = '\0';
    size_t s = scheme_len(url);
    if (!s) return buf;
    const char *text = url + s + 3, *end = text + strcspn(text, "?#");
    const char *hash = strchr(text, '#');
    if (hash && hash[1]) { /* "...#NAME": the name given */
        text = hash + 1;
        end = text + strlen(text);
    } else {
        /* host, port and path; never the credentials before '@' */
        size_t alen = strcspn(text, "/?#");
        for (size_t i = 0; i < alen; i++)
            if (text[i] == '@') text += i + 1, alen -= i + 1, i = (size_t)-1;
    }
    size_t at = 0;
    bool sep = false;
    for (const char *p = text; p < end && at + 1 < size; p++) {
        char c = *p;
        bool keep = isalnum((unsigned char)c) || c == '-' || c == '.' || (c == '_');
        if (!keep || (c == '.' && at == 0)) { /* no hidden files, no path separators */
            sep = at > 0;
            continue;
        }
        if (sep && at + 2 < size) buf[at++] = '_';
        sep = false;
        buf[at++] = c;
    }
    buf[at] = '\0';
    return buf;
}

const char *pf_io_url_muxer(const char *scheme)
{
    /* MPEG-TS for the byte-stream protocols: it needs no global header, so a
     * receiver can join at any keyframe, and ffmpeg/GStreamer/VLC read it. */
    static const char *const map[][2] = {{"udp", "mpegts"},  {"tcp", "mpegts"},
                                         {"srt", "mpegts"},  {"rtp", "rtp_mpegts"},
                                         {"rtsp", "rtsp"},   {"rtmp", "flv"},
                                         {"rtmps", "flv"},   {NULL, NULL}};
    for (int i = 0; scheme && map[i][0]; i++)
        if (!strcmp(scheme, map[i][0])) return map[i][1];
    return NULL;
}
