/* Progress, summary and JSON of `pixflow reproject` (see reproject_report.h). */
#define _POSIX_C_SOURCE 200809L

#include "reproject_report.h"

#include <math.h>
#include <string.h>

/* Progress ---------------------------------------------------------------------------------- */

void rp_progress_init(rp_progress *pg, bool tty, bool quiet)
{
    memset(pg, 0, sizeof *pg);
    pg->tty = tty;
    pg->quiet = quiet;
    pg->last_print_s = -1.0;
}

static void fmt_eta(char *buf, size_t size, double s)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, size, "--");
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, size, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

void rp_progress_update(rp_progress *pg, rp_run *r)
{
    if (pg->quiet) return;
    rp_stats s;
    rp_run_get_stats(r, &s);
    double interval = pg->tty ? 0.25 : 1.0;
    if (pg->last_print_s >= 0 && s.elapsed_s - pg->last_print_s < interval * 0.9) return;
    pg->last_print_s = s.elapsed_s;
    uint64_t finished = s.images_done + s.images_failed;
    double rate = s.elapsed_s > 0 ? (double)finished / s.elapsed_s : 0.0;
    char eta[32] = "--";
    if (s.images_expected >= 0 && rate > 0 && (int64_t)finished <= s.images_expected)
        fmt_eta(eta, sizeof eta, (double)(s.images_expected - (int64_t)finished) / rate);
    char total[32] = "?";
    if (s.images_expected >= 0) snprintf(total, sizeof total, "%lld", (long long)s.images_expected);
    flockfile(stderr);
    if (pg->tty) {
        enum { BAR = 30 };
        char bar[BAR + 1];
        double frac = s.images_expected > 0 ? (double)finished / (double)s.images_expected : 0;
        if (frac > 1) frac = 1;
        int fill = (int)(frac * BAR);
        for (int i = 0; i < BAR; i++) bar[i] = i < fill ? '#' : '.';
        bar[BAR] = '\0';
        fprintf(stderr, "\r\033[K[%s] %3.0f%%  %llu/%s images  %.1f images/s  ETA %s", bar,
                frac * 100, (unsigned long long)finished, total, rate, eta);
        if (s.images_failed) fprintf(stderr, "  failed %llu", (unsigned long long)s.images_failed);
        pg->shown = true;
    } else {
        fprintf(stderr, "reproject: %.1f s  %llu/%s images  %.1f images/s  failed %llu  ETA %s\n",
                s.elapsed_s, (unsigned long long)finished, total, rate,
                (unsigned long long)s.images_failed, eta);
    }
    fflush(stderr);
    funlockfile(stderr);
}

void rp_progress_clear(rp_progress *pg)
{
    if (pg->tty && pg->shown) fprintf(stderr, "\r\033[K");
    pg->shown = false;
    fflush(stderr);
}

/* Summary ------------------------------------------------------------------------------------- */

static int stage_threads(const rp_stats *s, int st)
{
    switch (st) {
    case RP_STAGE_READ:
    case RP_STAGE_DECODE: return s->decoders;
    case RP_STAGE_ENCODE:
    case RP_STAGE_WRITE: return s->encoders;
    default: return 1;
    }
}

static bool stage_used(const rp_stats *s, int st)
{
    return s->busy_count[st] > 0 ||
           (st != RP_STAGE_UPLOAD && st != RP_STAGE_DOWNLOAD);
}

static double per_image_ms(const rp_stats *s, int st)
{
    uint64_t images = s->images_done + s->images_failed;
    return images ? (double)s->busy_ns[st] * 1e-6 / (double)images : 0.0;
}

static double utilisation(const rp_stats *s, int st)
{
    double avail = s->elapsed_s * stage_threads(s, st);
    return avail > 0 ? (double)s->busy_ns[st] * 1e-9 / avail : 0.0;
}

static const char *device_name(pf_device *dev)
{
    const pf_device_props *p = pf_device_props_get(dev);
    return p ? p->name : "";
}

void rp_print_summary(FILE *f, const rp_config *cfg, pf_device *dev, const rp_stats *s,
                      uint64_t failures, bool interrupted)
{
    double rate = s->elapsed_s > 0 ? (double)s->images_done / s->elapsed_s : 0.0;
    fprintf(f, "reproject%s: %llu images -> %llu files in %s in %.2f s: %.2f images/s\n",
            interrupted ? " (interrupted)" : "", (unsigned long long)s->images_done,
            (unsigned long long)s->views_written, cfg->out_dir, s->elapsed_s, rate);
    fprintf(f, "  device     %s (%s); setup %.2f s before the stages started\n",
            pf_device_spec(dev), device_name(dev), s->setup_s);
    fprintf(f, "  latency    p50 %.1f ms  p99 %.1f ms  mean %.1f ms per image (read to last file)\n",
            s->latency_p50_ms, s->latency_p99_ms, s->latency_mean_ms);
    fprintf(f, "  failures   %llu\n", (unsigned long long)failures);
    fprintf(f, "  %-10s %9s %10s %8s %6s\n", "stage", "busy s", "ms/image", "threads", "util");
    for (int st = 0; st < RP_STAGE_COUNT; st++) {
        if (!stage_used(s, st)) continue;
        fprintf(f, "  %-10s %9.2f %10.2f %8d %5.0f%%\n", rp_stage_name((rp_stage)st),
                (double)s->busy_ns[st] * 1e-9, per_image_ms(s, st), stage_threads(s, st),
                utilisation(s, st) * 100);
    }
    fprintf(f, "  waiting    decoders for ring frames %.2f s, compute for output blocks %.2f s,"
               " encoders idle %.2f s\n",
            (double)s->ring_wait_ns * 1e-9, (double)s->output_wait_ns * 1e-9,
            (double)s->encode_idle_ns * 1e-9);
    char a[32], b[32];
    fprintf(f, "  memory     host %s (%s; ring %d frames, %d output blocks)", cli_fmt_bytes(a, sizeof a, s->host_bytes),
            s->pinned ? "pinned" : "pageable", s->ring, s->output_blocks);
    if (s->device_bytes)
        fprintf(f, ", device %s (%d in flight)", cli_fmt_bytes(b, sizeof b, s->device_bytes),
                s->inflight);
    fprintf(f, "\n");
    if (s->unpinned_fallbacks)
        fprintf(f, "  note       %llu frames were bigger than the first input and were decoded "
                   "into pageable memory\n", (unsigned long long)s->unpinned_fallbacks);
}

void rp_print_json(FILE *f, const rp_config *cfg, pf_device *dev, const rp_stats *s,
                   uint64_t failures, bool interrupted)
{
    cli_json j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "command", "reproject");
    cli_json_string(&j, "device", pf_device_spec(dev));
    cli_json_string(&j, "device_name", device_name(dev));
    cli_json_string(&j, "output_dir", cfg->out_dir);
    cli_json_uint(&j, "images", s->images_done);
    cli_json_uint(&j, "failures", failures);
    cli_json_uint(&j, "files_written", s->views_written);
    cli_json_int(&j, "views_per_image", cfg->num_outputs);
    cli_json_double(&j, "elapsed_s", s->elapsed_s);
    cli_json_double(&j, "setup_s", s->setup_s);
    cli_json_double(&j, "images_per_s",
                    s->elapsed_s > 0 ? (double)s->images_done / s->elapsed_s : 0.0);
    cli_json_bool(&j, "interrupted", interrupted);
    cli_json_object_begin(&j, "latency_ms");
    cli_json_double(&j, "p50", s->latency_p50_ms);
    cli_json_double(&j, "p99", s->latency_p99_ms);
    cli_json_double(&j, "mean", s->latency_mean_ms);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "stages");
    for (int st = 0; st < RP_STAGE_COUNT; st++) {
        cli_json_object_begin(&j, rp_stage_name((rp_stage)st));
        cli_json_double(&j, "busy_s", (double)s->busy_ns[st] * 1e-9);
        cli_json_double(&j, "ms_per_image", per_image_ms(s, st));
        cli_json_uint(&j, "count", s->busy_count[st]);
        cli_json_int(&j, "threads", stage_threads(s, st));
        cli_json_double(&j, "utilisation", utilisation(s, st));
        cli_json_object_end(&j);
    }
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "waits_s");
    cli_json_double(&j, "decoders_for_ring", (double)s->ring_wait_ns * 1e-9);
    cli_json_double(&j, "compute_for_output_blocks", (double)s->output_wait_ns * 1e-9);
    cli_json_double(&j, "encoders_idle", (double)s->encode_idle_ns * 1e-9);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "config");
    cli_json_int(&j, "decoders", s->decoders);
    cli_json_int(&j, "encoders", s->encoders);
    cli_json_int(&j, "ring", s->ring);
    cli_json_int(&j, "output_blocks", s->output_blocks);
    cli_json_int(&j, "inflight", s->inflight);
    cli_json_string(&j, "format", cfg->format == PF_IMAGE_PNG ? "png" : "jpeg");
    cli_json_int(&j, "quality", cfg->quality);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "memory");
    cli_json_uint(&j, "host_bytes", s->host_bytes);
    cli_json_bool(&j, "pinned", s->pinned);
    cli_json_uint(&j, "device_bytes", s->device_bytes);
    cli_json_uint(&j, "unpinned_fallbacks", s->unpinned_fallbacks);
    cli_json_object_end(&j);
    cli_json_object_end(&j);
    cli_json_finish(&j);
}
