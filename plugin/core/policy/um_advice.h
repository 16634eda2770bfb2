/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The versions of GPUMEM_UM_ADVICE, the one string the plugin writes into
 * a task's environment (env.c, gpumem_um_format) and libgpumem-um reads
 * (kernels/um/um_config.c; the grammar is in um_config.h).  v1 holds the
 * advice; v2 is v1 and the placement fields, written only when a policy
 * asks for a placement, so an older library reads what it always did and
 * refuses a v2 whole.  The writer, the library's parser and formatter, and
 * the fuzz oracle (tests/fuzz/fuzz_common.c) all take the version from
 * here, so none of them can drift from the others.  Header only: the
 * library does not link libgpumemcore.
 */
#ifndef GPUMEM_UM_ADVICE_H
#define GPUMEM_UM_ADVICE_H

#include <string.h>

#define GPUMEM_UM_ADVICE_V1     1       /* the advice fields */
#define GPUMEM_UM_ADVICE_V2     2       /* v1 and placement=... gpu_fraction= ... */
#define GPUMEM_UM_ADVICE_LAST   GPUMEM_UM_ADVICE_V2

/* The version a writer uses: the oldest that holds what it writes. */
static inline int gpumem_um_advice_version_for(int placement)
{
	return placement ? GPUMEM_UM_ADVICE_V2 : GPUMEM_UM_ADVICE_V1;
}

/* The string's first field for VERSION: "v1", "v2". */
static inline const char *gpumem_um_advice_tag(int version)
{
	return version == GPUMEM_UM_ADVICE_V2 ? "v2" : "v1";
}

/*
 * The version S starts with (its first field "vN", then ';' or the end),
 * or 0 when that is no version known here.
 */
static inline int gpumem_um_advice_version(const char *s)
{
	for (int v = GPUMEM_UM_ADVICE_V1; s && v <= GPUMEM_UM_ADVICE_LAST; v++) {
		const char *tag = gpumem_um_advice_tag(v);
		size_t n = strlen(tag);

		if (strncmp(s, tag, n) == 0 && (s[n] == ';' || s[n] == '\0'))
			return v;
	}
	return 0;
}

#endif
