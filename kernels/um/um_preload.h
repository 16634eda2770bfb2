/*
 * libgpumem-um internals shared between its source files.  Nothing here is
 * exported: the library is built with -fvisibility=hidden and only the
 * interposed entry points (um_preload.c, um_dlsym.c) have default visibility.
 */
#ifndef GPUMEM_UM_PRELOAD_H
#define GPUMEM_UM_PRELOAD_H

#define GPUMEM_UM_PROG          "gpumem-um"

typedef void *(*gpumem_um_dlsym_fn)(void *handle, const char *name);

/* The dlsym that would have answered without this library (never ours). */
gpumem_um_dlsym_fn gpumem_um_real_dlsym(void);

/*
 * Index of 'name' among the entry points this library replaces
 * (cuGetProcAddress, cuGetProcAddress_v2, cuMemAllocManaged), or -1.
 */
int gpumem_um_hooked(const char *name);

/*
 * A dlsym lookup of a hooked name answered 'sym': remember it as the real
 * entry point and return ours instead (or NULL when there is no real one).
 */
void *gpumem_um_dlsym_hooked(void *handle, const char *name);

/* One line on stderr, "gpumem-um: " prefixed; errno is preserved. */
void gpumem_um_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
