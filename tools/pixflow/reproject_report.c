/* Progress, summary and JSON of `pixflow reproject` (see reproject_report.h). */
#define _POSIX_C_SOURCE 200809L

#include "reproject_report.h"

#include <math.h>
#include <string.h>

/* Progress ---------------------------------------------------------------------------------- */

void rp_progress_init(rp_progress *pg, cli_job_ui *ui, bool quiet)
{
    memset(pg, 0, sizeof *pg);
    pg->ui = ui;
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

void rp_progress_update(rp_progress *pg, pf_job *job)
{
    if (pg->quiet) return;
    pf_job_progress s;
    if (pf_job_get_progress(job, &s) != PF_OK) return;
    double interval = pg->ui->tty ? 0.25 : 1.0;
    if (pg->last_print_s >= 0 && s.elapsed_s - pg->last_print_s < interval * 0.9) return;
    pg->last_print_s = s.elapsed_s;
    uint64_t finished = (uint64_t)s.done;
    double rate = s.elapsed_s > 0 ? (double)finished / s.elapsed_s : 0.0;
    char eta[32] = "--";
    if (s.total >= 0 && rate > 0 && (int64_t)finished <= s.total)
        fmt_eta(eta, sizeof eta, (double)(s.total - (int64_t)finished) / rate);
    char total[32] = "?";
    if (s.total >= 0) snprintf(total, sizeof total, "%lld", (long long)s.total);
    flockfile(stderr);
    if (pg->ui->tty) {
        enum { BAR = 30 };
        char bar[BAR + 1];
        double frac = s.total > 0 ? (double)finished / (double)s.total : 0;
        if (frac > 1) frac = 1;
        int fill = (int)(frac * BAR);
        for (int i = 0; i < BAR; i++) bar[i] = i < fill ? '#' : '.';
        bar[BAR] = '\0';
        fprintf(stderr, "\r\033[K[%s] %3.0f%%  %llu/%s images  %.1f images/s  ETA %s", bar,
                frac * 100, (unsigned long long)finished, total, rate, eta);
        if (s.failed) fprintf(stderr, "  failed %llu", (unsigned long long)s.failed);
        atomic_store(&pg->ui->shown, 1);
    } else {
        fprintf(stderr, "reproject: %.1f s  %llu/%s images  %.1f images/s  failed %llu  ETA %s\n",
                s.elapsed_s, (unsigned long long)finished, total, rate,
                (unsigned long long)s.failed, eta);
    }
    fflush(stderr);
    funlockfile(stderr);
}

/* Summary ------------------------------------------------------------------------------------- */

void rp_print_summary(FILE *f, pf_job *job, const pf_job_result *r)
{
    const pf_reproject_result *x = &r->reproject;
    fprintf(f, "reproject%s: %llu images -> %llu files in %s in %.2f s: %.2f images/s\n",
            r->status == PF_JOB_INTERRUPTED ? " (interrupted)" : "",
            (unsigned long long)x->images_done, (unsigned long long)x->files_written,
            x->output_dir, r->elapsed_s, r->fps);
    fprintf(f, "  device     %s (%s); setup %.2f s before the stages started\n", r->device,
            r->device_name, x->setup_s);
    fprintf(f, "  latency    p50 %.1f ms  p99 %.1f ms  mean %.1f ms per image (read to last file)\n",
            r->latency_p50_ms, r->latency_p99_ms, x->latency_mean_ms);
    fprintf(f, "  failures   %llu\n", (unsigned long long)r->failed);
    pf_job_print_stats(job, f);
    fprintf(f, "  waiting    decoders for ring frames %.2f s, compute for output blocks %.2f s,"
               " encoders idle %.2f s\n",
            (double)x->ring_wait_ns * 1e-9, (double)x->output_wait_ns * 1e-9,
            (double)x->encode_idle_ns * 1e-9);
    char a[32], b[32];
    fprintf(f, "  memory     host %s (%s; ring %d frames, %d output blocks)",
            cli_fmt_bytes(a, sizeof a, x->host_bytes), x->pinned ? "pinned" : "pageable", x->ring,
            x->output_blocks);
    if (x->device_bytes)
        fprintf(f, ", device %s (%d in flight)", cli_fmt_bytes(b, sizeof b, x->device_bytes),
                x->inflight);
    fprintf(f, "\n");
    fprintf(f, "  codecs     decode %s: %llu hardware, %llu gpu, %llu cpu; encode %s: %llu gpu, "
               "%llu cpu files\n",
            x->gpu_decode ? "nvJPEG" : "cpu", (unsigned long long)x->decoded_hw,
            (unsigned long long)x->decoded_gpu, (unsigned long long)x->decoded_cpu,
            x->gpu_encode ? "nvJPEG" : "cpu", (unsigned long long)x->encoded_gpu,
            (unsigned long long)x->encoded_cpu);
    if (x->unpinned_fallbacks)
        fprintf(f, "  note       %llu frames were bigger than the first input and were decoded "
                   "into pageable memory\n", (unsigned long long)x->unpinned_fallbacks);
}

static double per_image_ms(const pf_reproject_result *x, int st)
{
    uint64_t images = x->images_done + x->images_failed;
    return images ? (double)x->busy_ns[st] * 1e-6 / (double)images : 0.0;
}

void rp_print_json(FILE *f, const pf_job_result *r)
{
    const pf_reproject_result *x = &r->reproject;
    cli_json j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, NULL);
    cli_json_string(&j, "command", "reproject");
    cli_json_string(&j, "device", r->device);
    cli_json_string(&j, "device_name", r->device_name);
    cli_json_string(&j, "output_dir", x->output_dir);
    cli_json_uint(&j, "images", x->images_done);
    cli_json_uint(&j, "failures", (unsigned long long)r->failed);
    cli_json_uint(&j, "files_written", x->files_written);
    cli_json_int(&j, "views_per_image", x->views_per_image);
    cli_json_double(&j, "elapsed_s", r->elapsed_s);
    cli_json_double(&j, "setup_s", x->setup_s);
    cli_json_double(&j, "images_per_s", r->fps);
    cli_json_bool(&j, "interrupted", r->status == PF_JOB_INTERRUPTED);
    cli_json_object_begin(&j, "latency_ms");
    cli_json_double(&j, "p50", r->latency_p50_ms);
    cli_json_double(&j, "p99", r->latency_p99_ms);
    cli_json_double(&j, "mean", x->latency_mean_ms);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "stages");
    for (int st = 0; st < PF_REPROJECT_STAGES; st++) {
        cli_json_object_begin(&j, pf_reproject_stage_name((pf_reproject_stage)st));
        cli_json_double(&j, "busy_s", (double)x->busy_ns[st] * 1e-9);
        cli_json_double(&j, "ms_per_image", per_image_ms(x, st));
        cli_json_uint(&j, "count", x->busy_count[st]);
        cli_json_int(&j, "threads", x->stage_threads[st]);
        double avail = r->elapsed_s * x->stage_threads[st];
        cli_json_double(&j, "utilisation", avail > 0 ? (double)x->busy_ns[st] * 1e-9 / avail : 0.0);
        cli_json_object_end(&j);
    }
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "waits_s");
    cli_json_double(&j, "decoders_for_ring", (double)x->ring_wait_ns * 1e-9);
    cli_json_double(&j, "compute_for_output_blocks", (double)x->output_wait_ns * 1e-9);
    cli_json_double(&j, "encoders_idle", (double)x->encode_idle_ns * 1e-9);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "config");
    cli_json_int(&j, "decoders", x->decoders);
    cli_json_int(&j, "encoders", x->encoders);
    cli_json_int(&j, "ring", x->ring);
    cli_json_int(&j, "output_blocks", x->output_blocks);
    cli_json_int(&j, "inflight", x->inflight);
    cli_json_string(&j, "format", x->format == PF_IMAGE_PNG ? "png" : "jpeg");
    cli_json_int(&j, "quality", x->quality);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "codec");
    cli_json_string(&j, "decode", x->gpu_decode ? "nvjpeg" : "cpu");
    cli_json_string(&j, "encode", x->gpu_encode ? "nvjpeg" : "cpu");
    cli_json_uint(&j, "decoded_hardware", x->decoded_hw);
    cli_json_uint(&j, "decoded_gpu", x->decoded_gpu);
    cli_json_uint(&j, "decoded_cpu", x->decoded_cpu);
    cli_json_uint(&j, "encoded_gpu", x->encoded_gpu);
    cli_json_uint(&j, "encoded_cpu", x->encoded_cpu);
    cli_json_object_end(&j);
    cli_json_object_begin(&j, "memory");
    cli_json_uint(&j, "host_bytes", x->host_bytes);
    cli_json_bool(&j, "pinned", x->pinned);
    cli_json_uint(&j, "device_bytes", x->device_bytes);
    cli_json_uint(&j, "unpinned_fallbacks", x->unpinned_fallbacks);
    cli_json_object_end(&j);
    cli_json_object_end(&j);
    cli_json_finish(&j);
}
