/*
 * The advice libgpumem-um applies, as the SPANK plugin passes it in one
 * environment variable:
 *
 *   GPUMEM_UM_ADVICE=v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576;verbose=0
 *
 * Pure C, no CUDA: the parser is unit-tested without a GPU, and the plugin
 * side (plugin/core/env.c, gpumem_um_format) writes the same grammar.
 */
#ifndef GPUMEM_UM_CONFIG_H
#define GPUMEM_UM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define GPUMEM_UM_ENV           "GPUMEM_UM_ADVICE"
/* Longer values are refused: the plugin writes well under 200 bytes. */
#define GPUMEM_UM_MAX_LEN       1024

enum gpumem_um_where { GPUMEM_UM_NONE = 0, GPUMEM_UM_CPU, GPUMEM_UM_GPU };

#define GPUMEM_UM_BY_CPU        1u
#define GPUMEM_UM_BY_GPU        2u

struct gpumem_um_config {
	enum gpumem_um_where preferred;
	unsigned accessed_by;           /* GPUMEM_UM_BY_* */
	int read_mostly;
	enum gpumem_um_where prefetch;
	uint64_t min_bytes;             /* advise allocations of at least this */
	int verbose;
};

/* Nothing advised: what a field left out means. */
void gpumem_um_config_init(struct gpumem_um_config *c);

/*
 * Parse 's' into 'c'.  Returns 0, or -1 with a one-line reason (no prefix,
 * no newline, printable ASCII only) in 'err'; 'c' is then left at its
 * defaults, so a bad value never advises half of what was meant.
 */
int gpumem_um_config_parse(const char *s, struct gpumem_um_config *c, char *err, size_t errlen);

/* Whether 'c' asks for any advice at all. */
int gpumem_um_config_active(const struct gpumem_um_config *c);

/* The canonical form of 'c' (parses back to the same); -1 when 'len' is short. */
int gpumem_um_config_format(const struct gpumem_um_config *c, char *buf, size_t len);

const char *gpumem_um_where_name(enum gpumem_um_where w);

#endif
