/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes, units, names, and UTF-8 as JSON escapes (what json.c gives json-c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core_base.h"
#include "core_policy.h"
#include "tap.h"

/*
 * Characters beyond ASCII reach json-c as \u escapes (json-c 0.18's strict
 * mode refuses them raw): the parsed string keeps the bytes, and an error
 * after them is placed in the text as written.
 */
static void utf8_json(void)
{
	static const struct gpumem_json_caps caps = { 4096, 8, 64, "a test document" };
	const char *doc = "{\"r\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc2\x9b\"}";
	struct json_object *o = NULL, *r = NULL;
	char err[256] = "", *e;
	size_t n = 0;

	e = gpumem_utf8_json_escape("a\xc3\xa9\xf0\x9f\x98\x80", 7, &n);
	is_str(e, "a\\u00e9\\ud83d\\ude00", "UTF-8 as escapes, a surrogate pair past U+FFFF");
	ok(n == 19, "... and its length");
	ok(gpumem_utf8_json_unescaped_at("a\xc3\xa9\xf0\x9f\x98\x80", 7, 7) == 3,
	   "an offset of the escaped text maps back to the character's start");
	free(e);
	ok(gpumem_json_parse(doc, strlen(doc), &caps, &o, err, sizeof(err)) == 0 &&
	   json_object_object_get_ex(o, "r", &r), "a string beyond ASCII parses");
	is_str(r ? json_object_get_string(r) : NULL, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc2\x9b",
	       "... to the same bytes");
	json_object_put(o);
	doc = "{\"r\":\"\xc3\xa9\xe2\x82\xac\", x}";
	ok(gpumem_json_parse(doc, strlen(doc), &caps, &o, err, sizeof(err)) < 0, "an error after them");
	like(err, "line 1, column 12:", "... at its column in the text as written");
}

static uint64_t size_of(const char *s, int *ok_)
{
	const char *why = NULL;
	uint64_t v = 0;

	*ok_ = gpumem_parse_size(s, &v, &why) == 0;
	return v;
}

int main(void)
{
	char buf[64];
	const char *why = NULL;
	uint64_t v;
	int good;

	is_int(size_of("0", &good), 0, "0 bytes");
	is_int(size_of("1048576", &good), 1048576, "plain bytes");
	is_int(size_of("512KiB", &good), 512 * 1024, "KiB");
	is_int(size_of("1M", &good), 1 << 20, "M is MiB, as Slurm reads --mem");
	is_int(size_of("40 GiB", &good), 40ULL << 30, "a space before the unit");
	is_int(size_of("2TiB", &good), 2ULL << 40, "TiB");
	is_int(size_of("16B", &good), 16, "B");
	ok(gpumem_parse_size("40GB", &v, &why) < 0, "decimal GB refused");
	like(why, "ambiguous", "... as ambiguous");
	ok(gpumem_parse_size("4 parsecs", &v, &why) < 0, "unknown unit refused");
	ok(gpumem_parse_size("-1", &v, &why) < 0, "negative refused");
	ok(gpumem_parse_size("", &v, &why) < 0, "empty refused");
	ok(gpumem_parse_size("18446744073709551615", &v, &why) == 0 && v == UINT64_MAX,
	   "UINT64_MAX accepted");
	ok(gpumem_parse_size("18446744073709551616", &v, &why) < 0, "UINT64_MAX + 1 refused");
	like(why, "too large", "... as too large");
	ok(gpumem_parse_size("16777216TiB", &v, &why) < 0, "2^64 via a unit refused");
	like(why, "overflows", "... as an overflow");

	gpumem_format_size(40ULL << 30, buf, sizeof(buf));
	is_str(buf, "40GiB", "format 40GiB");
	gpumem_format_size(1536, buf, sizeof(buf));
	is_str(buf, "1536", "format 1536 stays bytes... in KiB units only when exact");
	gpumem_format_size(3 << 10, buf, sizeof(buf));
	is_str(buf, "3KiB", "format 3KiB");
	gpumem_format_size(0, buf, sizeof(buf));
	is_str(buf, "0", "format 0");

	is_str(gpumem_loc_name(GPUMEM_LOC_CPU), "cpu", "loc cpu");
	is_str(gpumem_daemon_name(GPUMEM_DAEMON_JOB), "job", "daemon job");
	is_str(gpumem_onfail_name(GPUMEM_ONFAIL_DRAIN), "drain", "on_fail drain");
	utf8_json();
	return tap_done();
}
