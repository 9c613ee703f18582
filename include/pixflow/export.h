/* pixflow/export.h - symbol export and C/C++ linkage macros shared by all public headers. */
#ifndef PIXFLOW_EXPORT_H
#define PIXFLOW_EXPORT_H

#if defined(_WIN32)
#  if defined(PF_BUILDING_LIBRARY)
#    define PF_API __declspec(dllexport)
#  else
#    define PF_API
#  endif
#elif defined(__GNUC__)
#  define PF_API __attribute__((visibility("default")))
#else
#  define PF_API
#endif

#ifdef __cplusplus
#  define PF_BEGIN_DECLS extern "C" {
#  define PF_END_DECLS }
#else
#  define PF_BEGIN_DECLS
#  define PF_END_DECLS
#endif

#if defined(__GNUC__)
#  define PF_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define PF_PRINTF(fmt, args)
#endif

#endif
