/* pixflow/version.h - library version, checked at compile time and at run time.
 *
 *   #if PF_VERSION_CODE >= PF_VERSION_MAKE(0, 2, 0)
 *   ...
 *   printf("built with %s, running %s\n", PF_VERSION_STRING, pf_version_string());
 */
#ifndef PIXFLOW_VERSION_H
#define PIXFLOW_VERSION_H

#define PF_VERSION_MAJOR 0
#define PF_VERSION_MINOR 1
#define PF_VERSION_PATCH 0

#define PF_VERSION_MAKE(a, b, c) (((a) << 16) | ((b) << 8) | (c))
#define PF_VERSION_CODE PF_VERSION_MAKE(PF_VERSION_MAJOR, PF_VERSION_MINOR, PF_VERSION_PATCH)

#define PF_STR_(x) #x
#define PF_STR(x) PF_STR_(x)
#define PF_VERSION_STRING \
    PF_STR(PF_VERSION_MAJOR) "." PF_STR(PF_VERSION_MINOR) "." PF_STR(PF_VERSION_PATCH)

#endif
