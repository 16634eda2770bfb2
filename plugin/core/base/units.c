/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes with units, numbers and UTF-8 as text (units.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "units.h"

/*
 * Binary units only, as Slurm reads --mem: K, KiB = 1024 bytes and so on.
 * Decimal "KB"/"MB"/"GB" are refused rather than guessed at.
 */
int gpumem_parse_size(const char *s, uint64_t *out, const char **why)
{
	static const struct { const char *u; unsigned shift; } units[] = {
		{ "", 0 }, { "B", 0 },
		{ "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 }, { "T", 40 }, { "TiB", 40 },
	};
	const char *p = s;
	uint64_t v = 0;
	int digits = 0;

	while (isdigit((unsigned char)*p)) {
		unsigned dgt = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - dgt) / 10) {
			*why = "number is too large";
			return -1;
		}
		v = v * 10 + dgt;
		p++;
		digits++;
	}
	if (digits == 0) {
		*why = "expected a size such as 1048576, 512KiB, 40GiB";
		return -1;
	}
	while (*p == ' ')
		p++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].u) != 0)
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift)) {
			*why = "size overflows 64 bits";
			return -1;
		}
		*out = v << units[i].shift;
		return 0;
	}
	if (!strcasecmp(p, "kb") || !strcasecmp(p, "mb") || !strcasecmp(p, "gb") ||
	    !strcasecmp(p, "tb"))
		*why = "decimal units are ambiguous: use KiB, MiB, GiB or TiB";
	else
		*why = "unknown unit: use B, KiB, MiB, GiB or TiB";
	return -1;
}

void gpumem_format_size(uint64_t v, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (i < 4 && v && (v & 1023) == 0) {
		v >>= 10;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%s", v, u[i]);
}

void gpumem_format_double(double v, char *buf, size_t len)
{
	/* The shortest of %.15g..%.17g that reads back as the same double. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
size_t gpumem_utf8_len(const unsigned char *s, size_t avail)
{
	uint32_t cp;
	size_t need;

	if (s[0] < 0x80) return 1;
	if ((s[0] & 0xe0) == 0xc0) { need = 1; cp = s[0] & 0x1f; }
	else if ((s[0] & 0xf0) == 0xe0) { need = 2; cp = s[0] & 0x0f; }
	else if ((s[0] & 0xf8) == 0xf0) { need = 3; cp = s[0] & 0x07; }
	else return 0;
	if (need >= avail)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3f);
	}
	if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
	    (need == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

int gpumem_utf8_has_high(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 1;
	return 0;
}

/* The bytes of the sequence at C (N long) as a JSON escape: 1, 6 or 12. */
static size_t escaped_len(const unsigned char *c, size_t n)
{
	return c[0] < 0x80 ? 1 : n == 4 ? 12 : 6;
}

/* The length of the sequence at S (1 for a byte that starts none). */
static size_t seq_len(const char *s, size_t avail)
{
	size_t n = gpumem_utf8_len((const unsigned char *)s, avail);

	return n ? n : 1;
}

char *gpumem_utf8_json_escape(const char *s, size_t len, size_t *out_len)
{
	char *out = malloc(len * 3 + 1), *o = out;

	for (size_t i = 0, n; out && i < len; i += n) {
		const unsigned char *c = (const unsigned char *)s + i;
		unsigned long cp;

		n = seq_len(s + i, len - i);
		if (n == 1) {
			*o++ = s[i];
			continue;
		}
		cp = n == 2 ? (c[0] & 0x1fUL) << 6 : n == 3 ? (c[0] & 0x0fUL) << 12 : (c[0] & 0x07UL) << 18;
		for (size_t k = 1; k < n; k++)
			cp |= (c[k] & 0x3fUL) << (6 * (n - 1 - k));
		if (cp < 0x10000)
			o += sprintf(o, "\\u%04lx", cp);
		else
			o += sprintf(o, "\\u%04lx\\u%04lx", 0xd800 + ((cp - 0x10000) >> 10),
				     0xdc00 + ((cp - 0x10000) & 0x3ff));
	}
	if (out) {
		*o = '\0';
		*out_len = (size_t)(o - out);
	}
	return out;
}

size_t gpumem_utf8_json_unescaped_at(const char *s, size_t len, size_t at)
{
	size_t i = 0, p = 0, n, w;

	for (; i < len; i += n, p += w) {
		n = seq_len(s + i, len - i);
		w = escaped_len((const unsigned char *)s + i, n);
		if (p + w > at)
			break;
	}
	return i;
}
