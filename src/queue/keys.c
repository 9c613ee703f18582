/* Key names of a queue (keys.h). */
#include "keys.h"

#include <stdio.h>
#include <string.h>

#include "../core/error.h"

pf_status pf_queue_keys_make(const char *name, pf_queue_keys *k)
{
    size_t n = name ? strlen(name) : 0;
    bool ok = n >= 1 && n <= PF_QUEUE_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    }
    if (!ok)
        return pf_set_error(PF_ERR_INVALID,
                            "queue name '%.80s' must be 1..64 characters of A-Z a-z 0-9 . _ -",
                            name ? name : "(null)");
    snprintf(k->jobs, sizeof k->jobs, "pixflow:{%s}:jobs", name);
    snprintf(k->results, sizeof k->results, "pixflow:{%s}:results", name);
    snprintf(k->dead, sizeof k->dead, "pixflow:{%s}:dead", name);
    snprintf(k->done, sizeof k->done, "pixflow:{%s}:done", name);
    snprintf(k->delayed, sizeof k->delayed, "pixflow:{%s}:delayed", name);
    snprintf(k->workers, sizeof k->workers, "pixflow:{%s}:workers", name);
    return PF_OK;
}

pf_status pf_queue_unsupported(void)
{
    return pf_set_error(PF_ERR_UNSUPPORTED,
                        "pixflow was built without hiredis: no Redis queue (install "
                        "libhiredis-dev and rebuild)");
}
