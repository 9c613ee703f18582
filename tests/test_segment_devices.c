/* pf_segment_params' several-device fields are checked before anything is
 * opened: a device listed twice, a NULL entry, num_devices without devices[]
 * or out of range, and a device_of entry past the list are PF_ERR_INVALID
 * naming the field; nothing is written. (Spreading streams over two GPUs is
 * tested on the GPU machine: segment_multigpu.) */
#include <sys/stat.h>

#include "pf_test.h"

static pf_status start(pf_segment_params *p)
{
    pf_job *j = NULL;
    pf_status st = pf_segment_start(p, &j);
    if (j) pf_job_destroy(&j);
    return st;
}

static void test_bad_devices(void)
{
    pf_device *cpu = NULL;
    REQUIRE(pf_device_get(PF_DEVICE_CPU, 0, &cpu) == PF_OK);
    const char *inputs[] = {"/nonexistent/a.h264", "/nonexistent/b.h264"};
    const char *out = "/tmp/pf_segment_devices_{name}.mp4";
    pf_segment_params p = pf_segment_params_default();
    p.inputs = inputs;
    p.num_inputs = 2;
    p.output = out;

    pf_device *twice[2] = {cpu, cpu};
    p.devices = twice;
    p.num_devices = 2;
    CHECK_EQ_INT(start(&p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "devices[1]") && strstr(pf_last_error(), "devices[0]"));

    pf_device *with_null[2] = {cpu, NULL};
    p.devices = with_null;
    CHECK_EQ_INT(start(&p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "devices[1]: NULL") != NULL);

    p.devices = NULL;
    CHECK_EQ_INT(start(&p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "num_devices 2") != NULL);
    p.num_devices = 17;
    p.devices = twice;
    CHECK_EQ_INT(start(&p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "num_devices 17") != NULL);

    pf_device *one[1] = {cpu};
    const int past[2] = {0, 1};
    p.devices = one;
    p.num_devices = 1;
    p.device_of = past;
    CHECK_EQ_INT(start(&p), PF_ERR_INVALID);
    CHECK(strstr(pf_last_error(), "device_of[1] 1") != NULL);

    struct stat sb;
    CHECK(stat("/tmp/pf_segment_devices_a.mp4", &sb) != 0);
}

int main(void)
{
    PF_RUN(test_bad_devices);
    return pf_test_finish();
}
