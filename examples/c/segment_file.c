/* Segments a video or image file with the library's segment job and
 * prints the summary: the C version of `pixflow segment IN -o OUT`.
 *
 *   cc segment_file.c $(pkg-config --cflags --libs pixflow) -o segment_file
 *   ./segment_file clip.mp4 clip_green.mp4 '#00ff00'
 */
#include <stdio.h>

#include <pixflow/pixflow.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT [BACKGROUND]\n", argv[0]);
        return 2;
    }
    pf_segment_params p = pf_segment_params_default();
    p.inputs = (const char *const *)&argv[1];
    p.num_inputs = 1;
    p.output = argv[2];
    p.background = argc > 3 ? argv[3] : "blur";   /* blur, none, #RRGGBB or an image */
    pf_job *job = NULL;
    if (pf_segment_start(&p, &job) != PF_OK) {     /* messages went to pf_log */
        fprintf(stderr, "segment_file: %s\n", pf_last_error());
        return 1;
    }
    pf_job_progress pg;
    while (pf_job_wait(job, 500000) == PF_TIMEOUT)   /* every 0.5 s */
        if (pf_job_get_progress(job, &pg) == PF_OK)
            fprintf(stderr, "%lld/%lld frames\n", (long long)pg.done, (long long)pg.total);
    pf_job_result r;
    pf_job_get_result(job, &r);
    printf("%s -> %s: %s, %lld frames, %.1f fps on %s\n", r.input, r.output,
           pf_job_status_name(r.status), (long long)r.frames, r.fps, r.device);
    int rc = r.status == PF_JOB_DONE && r.failed == 0 ? 0 : 1;
    pf_job_destroy(&job);
    return rc;
}
