/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUMEM_UM_ADVICE: the one channel from the SPANK plugin to libgpumem-um.
 *
 * Strict on purpose: only the plugin writes this variable, so anything it
 * does not recognise means the plugin and the library disagree (mixed
 * versions on a node), and advising half of a policy would be worse than
 * advising none.  The library then logs the reason and leaves the job alone.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_policy.h"
#include "um_config.h"

enum {
	F_PREFERRED   = 1u << 0,
	F_ACCESSED_BY = 1u << 1,
	F_READ_MOSTLY = 1u << 2,
	F_PREFETCH    = 1u << 3,
	F_MIN_BYTES   = 1u << 4,
	F_VERBOSE     = 1u << 5,
	/* v2 */
	F_PLACEMENT   = 1u << 6,
	F_GPU_FRAC    = 1u << 7,
	F_GPU_MAX     = 1u << 8,
	F_RESERVE     = 1u << 9,
	F_GRANULARITY = 1u << 10,
	F_V2          = F_PLACEMENT | F_GPU_FRAC | F_GPU_MAX | F_RESERVE | F_GRANULARITY,
};

static const struct {
	const char *name;
	unsigned bit;
} um_fields[] = {
	{ "preferred",   F_PREFERRED },
	{ "accessed_by", F_ACCESSED_BY },
	{ "read_mostly", F_READ_MOSTLY },
	{ "prefetch",    F_PREFETCH },
	{ "min_bytes",   F_MIN_BYTES },
	{ "verbose",     F_VERBOSE },
	{ "placement",   F_PLACEMENT },
	{ "gpu_fraction", F_GPU_FRAC },
	{ "gpu_max",     F_GPU_MAX },
	{ "reserve",     F_RESERVE },
	{ "granularity", F_GRANULARITY },
};

void gpumem_um_config_init(struct gpumem_um_config *c)
{
	memset(c, 0, sizeof(*c));
	c->preferred = GPUMEM_UM_NONE;
	c->prefetch = GPUMEM_UM_NONE;
	c->placement = GPUMEM_UM_PLACE_NONE;
	c->gpu_ppm = GPUMEM_UM_AUTO;
	c->max_ppm = GPUMEM_UM_PPM;
	c->granularity = GPUMEM_UM_GRAN_DEFAULT;
}

const char *gpumem_um_where_name(enum gpumem_um_where w)
{
	switch (w) {
	case GPUMEM_UM_CPU: return "cpu";
	case GPUMEM_UM_GPU: return "gpu";
	default: return "none";
	}
}

int gpumem_um_config_active(const struct gpumem_um_config *c)
{
	return c->preferred != GPUMEM_UM_NONE || c->accessed_by != 0 || c->read_mostly ||
	       c->prefetch != GPUMEM_UM_NONE || c->placement != GPUMEM_UM_PLACE_NONE;
}

/*
 * Copy at most 'max' characters of 's' for a message: the value comes from
 * the environment, so nothing unprintable may reach the job's stderr.
 */
static void um_quote(char *dst, size_t dstlen, const char *s, size_t n)
{
	const size_t max = 40;
	size_t o = 0;

	for (size_t i = 0; i < n && i < max && o + 1 < dstlen; i++)
		dst[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (n > max && o + 4 < dstlen) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o < dstlen ? o : dstlen - 1] = '\0';
}

static void um_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void um_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int um_where(const char *v, int allow_none, enum gpumem_um_where *out)
{
	if (strcmp(v, "cpu") == 0)
		*out = GPUMEM_UM_CPU;
	else if (strcmp(v, "gpu") == 0)
		*out = GPUMEM_UM_GPU;
	else if (allow_none && strcmp(v, "none") == 0)
		*out = GPUMEM_UM_NONE;
	else
		return -1;
	return 0;
}

static int um_bool(const char *v, int *out)
{
	if (strcmp(v, "0") == 0)
		*out = 0;
	else if (strcmp(v, "1") == 0)
		*out = 1;
	else
		return -1;
	return 0;
}

/* "cpu", "gpu", "cpu,gpu" (any order) or "none". */
static int um_access_list(char *v, unsigned *out)
{
	unsigned bits = 0;
	char *save = NULL;

	if (strcmp(v, "none") == 0) {
		*out = 0;
		return 0;
	}
	/* strtok_r skips empty items; "gpu," is a typo, not "gpu". */
	if (v[0] == ',' || v[0] == '\0' || v[strlen(v) - 1] == ',' || strstr(v, ",,") != NULL)
		return -1;
	for (char *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned b;

		if (strcmp(t, "cpu") == 0)
			b = GPUMEM_UM_BY_CPU;
		else if (strcmp(t, "gpu") == 0)
			b = GPUMEM_UM_BY_GPU;
		else
			return -1;
		if (bits & b)
			return -1;
		bits |= b;
	}
	if (bits == 0)
		return -1;
	*out = bits;
	return 0;
}

/* Plain decimal, no sign, no spaces, no suffix, no overflow. */
static int um_u64(const char *v, uint64_t *out)
{
	uint64_t x = 0;

	if (*v == '\0')
		return -1;
	for (const char *p = v; *p; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return -1;
		d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/* "0", "1", "0.25", "1.000000": at most 6 decimals, at most 1; into ppm. */
static int um_fraction(const char *v, uint32_t *out)
{
	uint32_t whole, frac = 0, scale = GPUMEM_UM_PPM;
	const char *p = v;

	if (*p != '0' && *p != '1')
		return -1;
	whole = (uint32_t)(*p++ - '0');
	if (*p == '.') {
		if (*++p == '\0')
			return -1;
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || scale == 1)
				return -1;
			scale /= 10;
			frac += (uint32_t)(*p - '0') * scale;
		}
	}
	if (*p != '\0' || (whole == 1 && frac != 0))
		return -1;
	*out = whole * GPUMEM_UM_PPM + frac;
	return 0;
}

static int um_field(unsigned bit, const char *val, const char *qv, struct gpumem_um_config *t,
		    char *err, size_t errlen);

int gpumem_um_config_parse(const char *s, struct gpumem_um_config *c, char *err, size_t errlen)
{
	char buf[GPUMEM_UM_MAX_LEN + 1];
	char q[64], qv[64];
	struct gpumem_um_config tmp;
	unsigned seen = 0;
	char *save = NULL, *field;
	size_t len;
	int rv = -1, first = 1, v2 = 0, version;

	gpumem_um_config_init(c);
	gpumem_um_config_init(&tmp);
	if (err && errlen)
		err[0] = '\0';
	if (s == NULL) {
		um_err(err, errlen, "not set");
		goto fail;
	}
	len = strlen(s);
	if (len > GPUMEM_UM_MAX_LEN) {
		um_err(err, errlen, "longer than %d bytes", GPUMEM_UM_MAX_LEN);
		goto fail;
	}
	memcpy(buf, s, len + 1);

	/*
	 * strtok_r would merge ";;" silently, which is what we want: empty
	 * fields (a trailing ';') carry nothing.  The version is checked on
	 * the raw text so that ";v1" is not mistaken for a good start.
	 */
	version = gpumem_um_advice_version(buf);
	if (version == 0) {
		size_t n = strcspn(buf, ";");

		um_quote(q, sizeof(q), buf, n);
		if (buf[0] == 'v' && n > 1 && strspn(buf + 1, "0123456789") == n - 1)
			um_err(err, errlen, "version '%s' is not supported (this library reads v1 and v2)", q);
		else
			um_err(err, errlen, "does not start with 'v1' or 'v2' (got '%s')", q);
		goto fail;
	}
	v2 = version >= GPUMEM_UM_ADVICE_V2;
	for (field = strtok_r(buf, ";", &save); field; field = strtok_r(NULL, ";", &save)) {
		char *eq, *val;
		unsigned bit = 0;

		if (first) {            /* the version, checked above */
			first = 0;
			continue;
		}
		eq = strchr(field, '=');
		if (eq == NULL) {
			um_quote(q, sizeof(q), field, strlen(field));
			um_err(err, errlen, "field '%s' is not NAME=VALUE", q);
			goto fail;
		}
		*eq = '\0';
		val = eq + 1;
		for (size_t i = 0; i < sizeof(um_fields) / sizeof(um_fields[0]); i++)
			if (strcmp(field, um_fields[i].name) == 0)
				bit = um_fields[i].bit;
		um_quote(q, sizeof(q), field, strlen(field));
		um_quote(qv, sizeof(qv), val, strlen(val));
		if (bit == 0 || (!v2 && (bit & F_V2))) {
			um_err(err, errlen, "unknown field '%s'%s", q, bit ? " (a v2 field in v1)" : "");
			goto fail;
		}
		if (seen & bit) {
			um_err(err, errlen, "field '%s' given twice", q);
			goto fail;
		}
		seen |= bit;
		if (um_field(bit, val, qv, &tmp, err, errlen) < 0)
			goto fail;
	}
	*c = tmp;
	rv = 0;
fail:
	return rv;
}

/* One NAME=VALUE into 't'; -1 with the reason in 'err'. */
static int um_field(unsigned bit, const char *val, const char *qv, struct gpumem_um_config *t,
		    char *err, size_t errlen)
{
	char tmpv[GPUMEM_UM_MAX_LEN + 1];
	uint32_t ppm;

	switch (bit) {
	case F_PREFERRED:
		if (um_where(val, 1, &t->preferred) == 0)
			return 0;
		um_err(err, errlen, "preferred='%s': want cpu, gpu or none", qv);
		return -1;
	case F_PREFETCH:
		if (um_where(val, 1, &t->prefetch) == 0)
			return 0;
		um_err(err, errlen, "prefetch='%s': want cpu, gpu or none", qv);
		return -1;
	case F_ACCESSED_BY:
		snprintf(tmpv, sizeof(tmpv), "%s", val);
		if (um_access_list(tmpv, &t->accessed_by) == 0)
			return 0;
		um_err(err, errlen, "accessed_by='%s': want cpu, gpu, cpu,gpu or none", qv);
		return -1;
	case F_READ_MOSTLY:
		if (um_bool(val, &t->read_mostly) == 0)
			return 0;
		um_err(err, errlen, "read_mostly='%s': want 0 or 1", qv);
		return -1;
	case F_VERBOSE:
		if (um_bool(val, &t->verbose) == 0)
			return 0;
		um_err(err, errlen, "verbose='%s': want 0 or 1", qv);
		return -1;
	case F_MIN_BYTES:
		if (um_u64(val, &t->min_bytes) == 0)
			return 0;
		um_err(err, errlen, "min_bytes='%s': want a decimal byte count", qv);
		return -1;
	case F_PLACEMENT:
		if (strcmp(val, "none") == 0 || strcmp(val, "stripe") == 0) {
			t->placement = val[0] == 's' ? GPUMEM_UM_PLACE_STRIPE : GPUMEM_UM_PLACE_NONE;
			return 0;
		}
		um_err(err, errlen, "placement='%s': want none or stripe", qv);
		return -1;
	case F_GPU_FRAC:
		if (strcmp(val, "auto") == 0) {
			t->gpu_ppm = GPUMEM_UM_AUTO;
			return 0;
		}
		if (um_fraction(val, &ppm) == 0) {
			t->gpu_ppm = (int32_t)ppm;
			return 0;
		}
		um_err(err, errlen, "gpu_fraction='%s': want auto or a decimal from 0 to 1", qv);
		return -1;
	case F_GPU_MAX:
		if (um_fraction(val, &t->max_ppm) == 0)
			return 0;
		um_err(err, errlen, "gpu_max='%s': want a decimal from 0 to 1", qv);
		return -1;
	case F_RESERVE:
		if (um_u64(val, &t->reserve) == 0)
			return 0;
		um_err(err, errlen, "reserve='%s': want a decimal byte count", qv);
		return -1;
	case F_GRANULARITY:
		if (um_u64(val, &t->granularity) == 0 && t->granularity >= GPUMEM_UM_GRAN_MIN &&
		    t->granularity <= GPUMEM_UM_GRAN_MAX && (t->granularity & (t->granularity - 1)) == 0)
			return 0;
		um_err(err, errlen, "granularity='%s': want a power of two from %u to %u", qv,
		       GPUMEM_UM_GRAN_MIN, GPUMEM_UM_GRAN_MAX);
		return -1;
	}
	return -1;
}

/* ppm as the shortest decimal: 250000 -> "0.25". */
static void um_ppm_str(uint32_t ppm, char *buf, size_t len)
{
	char frac[8];
	size_t n;

	if (ppm % GPUMEM_UM_PPM == 0) {
		snprintf(buf, len, "%u", ppm / GPUMEM_UM_PPM);
		return;
	}
	snprintf(frac, sizeof(frac), "%06u", ppm % GPUMEM_UM_PPM);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "%u.%s", ppm / GPUMEM_UM_PPM, frac);
}

int gpumem_um_config_format(const struct gpumem_um_config *c, char *buf, size_t len)
{
	const unsigned a = c->accessed_by;
	char frac[16], max[16];
	int n, m;

	n = snprintf(buf, len, "%s;preferred=%s;accessed_by=%s;read_mostly=%d;prefetch=%s;"
		     "min_bytes=%" PRIu64 ";verbose=%d",
		     gpumem_um_advice_tag(gpumem_um_advice_version_for(
			     c->placement != GPUMEM_UM_PLACE_NONE)),
		     gpumem_um_where_name(c->preferred),
		     a == (GPUMEM_UM_BY_CPU | GPUMEM_UM_BY_GPU) ? "cpu,gpu" :
		     a == GPUMEM_UM_BY_CPU ? "cpu" : a == GPUMEM_UM_BY_GPU ? "gpu" : "none",
		     c->read_mostly ? 1 : 0, gpumem_um_where_name(c->prefetch),
		     c->min_bytes, c->verbose ? 1 : 0);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (c->placement == GPUMEM_UM_PLACE_NONE)
		return 0;
	if (c->gpu_ppm == GPUMEM_UM_AUTO)
		snprintf(frac, sizeof(frac), "auto");
	else
		um_ppm_str((uint32_t)c->gpu_ppm, frac, sizeof(frac));
	um_ppm_str(c->max_ppm, max, sizeof(max));
	m = snprintf(buf + n, len - (size_t)n, ";placement=stripe;gpu_fraction=%s;gpu_max=%s;"
		     "reserve=%" PRIu64 ";granularity=%" PRIu64, frac, max, c->reserve,
		     c->granularity);
	return m < 0 || (size_t)m >= len - (size_t)n ? -1 : 0;
}
