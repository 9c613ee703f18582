/* jobs.c - the flagship jobs (pixflow/jobs.h: segment, reproject) as Python
 * calls. Bound once the jobs API is in the library; until then the module
 * has none of them. */
#include "pfpy.h"

int pfpy_jobs_init(PyObject *m)
{
    return 0;
}
