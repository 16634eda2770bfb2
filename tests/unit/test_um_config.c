/* GPUMEM_UM_ADVICE parsing (kernels/um/um_config.c), as libgpumem-um reads it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "um_config.h"

static struct gpumem_um_config c;
static char err[160];

static int parse(const char *s)
{
	return gpumem_um_config_parse(s, &c, err, sizeof(err));
}

/* A rejected value: -1, a reason containing 'why', the config left at defaults. */
static void bad(const char *s, const char *why)
{
	struct gpumem_um_config dflt;

	gpumem_um_config_init(&dflt);
	c.preferred = GPUMEM_UM_GPU;    /* must be reset by the parser */
	is_int(parse(s), -1, "rejects '%s'", s);
	like(err, why, "  says why: %s", why);
	ok(memcmp(&c, &dflt, sizeof(c)) == 0, "  and advises nothing");
	ok(strchr(err, '\n') == NULL, "  in one line");
}

int main(void)
{
	char buf[256];
	struct gpumem_um_config back;

	/* What the plugin writes (plugin/core/env.c, gpumem_um_format). */
	is_int(parse("v1;preferred=cpu;accessed_by=gpu;read_mostly=0;prefetch=none;min_bytes=1048576"),
	       0, "the plugin's string parses");
	is_int(c.preferred, GPUMEM_UM_CPU, "preferred=cpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_GPU, "accessed_by=gpu");
	is_int(c.read_mostly, 0, "read_mostly=0");
	is_int(c.prefetch, GPUMEM_UM_NONE, "prefetch=none");
	is_int(c.min_bytes, 1048576, "min_bytes=1048576");
	is_int(c.verbose, 0, "verbose defaults to 0");
	ok(gpumem_um_config_active(&c), "that is advice to apply");

	is_int(parse("v1;verbose=1;min_bytes=0;prefetch=gpu;read_mostly=1;accessed_by=cpu,gpu;preferred=gpu"),
	       0, "fields in any order");
	is_int(c.preferred, GPUMEM_UM_GPU, "preferred=gpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU, "accessed_by=cpu,gpu");
	is_int(c.read_mostly, 1, "read_mostly=1");
	is_int(c.prefetch, GPUMEM_UM_GPU, "prefetch=gpu");
	is_int(c.min_bytes, 0, "min_bytes=0");
	is_int(c.verbose, 1, "verbose=1");

	is_int(parse("v1;accessed_by=gpu,cpu;prefetch=cpu"), 0, "accessed_by=gpu,cpu");
	is_int(c.accessed_by, GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU, "  is both");
	is_int(c.prefetch, GPUMEM_UM_CPU, "prefetch=cpu");
	is_int(parse("v1;accessed_by=none;preferred=none"), 0, "none is a value");
	is_int(c.accessed_by, 0, "  accessed_by=none");
	ok(!gpumem_um_config_active(&c), "  and nothing to apply");

	is_int(parse("v1"), 0, "bare v1 is valid");
	ok(!gpumem_um_config_active(&c), "  and advises nothing");
	is_int(c.min_bytes, 0, "  min_bytes defaults to 0");
	is_int(parse("v1;preferred=cpu;"), 0, "a trailing ';' is ignored");
	is_int(parse("v1;;preferred=cpu"), 0, "an empty field is ignored");
	is_int(c.preferred, GPUMEM_UM_CPU, "  and the rest still read");
	is_int(parse("v1;min_bytes=18446744073709551615"), 0, "min_bytes up to 2^64-1");
	ok(c.min_bytes == UINT64_MAX, "  is exact");

	/* Everything else is refused, with the reason. */
	bad("", "does not start with 'v1'");
	bad("preferred=cpu", "does not start with 'v1'");
	bad("v2;preferred=cpu", "version 'v2' is not supported");
	bad("v10", "version 'v10' is not supported");
	bad("v1x;preferred=cpu", "does not start with 'v1'");
	bad(";v1;preferred=cpu", "does not start with 'v1'");
	bad("V1;preferred=cpu", "does not start with 'v1'");
	bad("v1;colour=blue", "unknown field 'colour'");
	bad("v1;preferred", "field 'preferred' is not NAME=VALUE");
	bad("v1;=cpu", "unknown field ''");
	bad("v1;preferred=host", "preferred='host': want cpu, gpu or none");
	bad("v1;preferred=CPU", "preferred='CPU'");
	bad("v1;preferred=", "preferred='': want");
	bad("v1;preferred=cpu;preferred=gpu", "field 'preferred' given twice");
	bad("v1;prefetch=both", "prefetch='both'");
	bad("v1;accessed_by=", "accessed_by='': want");
	bad("v1;accessed_by=gpu,", "accessed_by='gpu,'");
	bad("v1;accessed_by=cpu,cpu", "accessed_by='cpu,cpu'");
	bad("v1;accessed_by=none,gpu", "accessed_by='none,gpu'");
	bad("v1;accessed_by=gpu0", "accessed_by='gpu0'");
	bad("v1;read_mostly=yes", "read_mostly='yes': want 0 or 1");
	bad("v1;read_mostly=2", "read_mostly='2'");
	bad("v1;verbose=true", "verbose='true'");
	bad("v1;min_bytes=1M", "min_bytes='1M': want a decimal byte count");
	bad("v1;min_bytes=-1", "min_bytes='-1'");
	bad("v1;min_bytes= 1", "min_bytes=' 1'");
	bad("v1;min_bytes=", "min_bytes=''");
	bad("v1;min_bytes=18446744073709551616", "min_bytes='18446744073709551616'");
	bad("v1; preferred=cpu", "unknown field ' preferred'");
	bad("v1;preferred=cpu;extra=1", "unknown field 'extra'");
	/* Only printable ASCII from the environment reaches stderr. */
	bad("v1;preferred=\x1b[31mred", "preferred='?[31mred'");
	bad("v1;preferred=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "...': want");

	{
		char big[GPUMEM_UM_MAX_LEN + 8];

		memset(big, ';', sizeof(big) - 1);
		big[0] = 'v';
		big[1] = '1';
		big[sizeof(big) - 1] = '\0';
		bad(big, "longer than");
	}
	is_int(gpumem_um_config_parse(NULL, &c, err, sizeof(err)), -1, "NULL is refused");
	is_int(gpumem_um_config_parse("x", &c, NULL, 0), -1, "no error buffer is fine");

	/* The canonical form parses back to the same advice. */
	is_int(parse("v1;accessed_by=cpu,gpu;preferred=gpu;read_mostly=1;prefetch=cpu;min_bytes=42;verbose=1"),
	       0, "a full string parses");
	is_int(gpumem_um_config_format(&c, buf, sizeof(buf)), 0, "and formats");
	is_str(buf, "v1;preferred=gpu;accessed_by=cpu,gpu;read_mostly=1;prefetch=cpu;min_bytes=42;verbose=1",
	       "canonical form");
	is_int(gpumem_um_config_parse(buf, &back, err, sizeof(err)), 0, "which parses back");
	ok(memcmp(&c, &back, sizeof(c)) == 0, "  to the same advice");
	is_int(gpumem_um_config_format(&c, buf, 10), -1, "a short buffer is an error");
	is_str(gpumem_um_where_name(GPUMEM_UM_NONE), "none", "where names: none");

	return tap_done();
}
