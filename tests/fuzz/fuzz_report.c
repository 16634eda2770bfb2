/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the JSON module's reader (plugin/core/base/json.c, on
 * json-c), as `gpumem report` and the plugin use it.
 *
 * Report files sit in a directory that every node writes and jobs can
 * influence, so the reader gets what the policy parser gets: bytes ->
 * gpumem_json_parse_report; an error leaves *out NULL and a message; a
 * document respects the depth and value caps, holds only valid UTF-8
 * strings without NUL and finite numbers; and what gpumem_json_write
 * writes of it, in either style, parses back to an equal document.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "core_record.h"

/* Check one value and below; returns how many values it holds. */
static size_t check_value(struct json_object *v, int depth)
{
	size_t count = 1;

	switch (json_object_get_type(v)) {
	case json_type_null:
		FUZZ_CHECK(gpumem_json_text(v) == NULL, "text of null");
		break;
	case json_type_boolean:
	case json_type_int:
		FUZZ_CHECK(gpumem_json_text(v) != NULL, "no text for a scalar");
		break;
	case json_type_double:
		FUZZ_CHECK(isfinite(json_object_get_double(v)), "number %g",
			   json_object_get_double(v));
		FUZZ_CHECK(gpumem_json_text(v) != NULL, "no text for a number");
		break;
	case json_type_string:
		FUZZ_CHECK(strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v),
			   "NUL in a string");
		FUZZ_CHECK(fuzz_utf8_ok((const unsigned char *)json_object_get_string(v)),
			   "string not UTF-8");
		FUZZ_CHECK(gpumem_json_text(v) == json_object_get_string(v), "text of a string");
		break;
	case json_type_array:
		FUZZ_CHECK(depth < GPUMEM_REPORT_JSON_MAX_DEPTH, "depth %d", depth + 1);
		for (size_t i = 0; i < gpumem_json_len(v); i++)
			count += check_value(gpumem_json_at(v, i), depth + 1);
		break;
	case json_type_object: {
		FUZZ_CHECK(depth < GPUMEM_REPORT_JSON_MAX_DEPTH, "depth %d", depth + 1);
		json_object_object_foreach(v, key, item) {
			FUZZ_CHECK(fuzz_utf8_ok((const unsigned char *)key), "key not UTF-8");
			FUZZ_CHECK(gpumem_json_get(v, key) == item, "get of key '%s'", key);
			count += check_value(item, depth + 1);
		}
		break;
	}
	default:
		FUZZ_CHECK(0, "type %d", (int)json_object_get_type(v));
	}
	return count;
}

/* What gpumem_json_write writes in STYLE parses back equal. */
static void round_trip(struct json_object *v, enum gpumem_json_style style)
{
	struct json_object *again;
	char err[256], *text = NULL;
	size_t tlen = 0;
	FILE *f;
	int rv;

	f = open_memstream(&text, &tlen);
	FUZZ_CHECK(f != NULL, "open_memstream");
	FUZZ_CHECK(gpumem_json_write(f, v, style) == 0, "write");
	FUZZ_CHECK(fclose(f) == 0, "fclose");
	rv = gpumem_json_parse_report(text, tlen, &again, err, sizeof(err));
	if (rv != 0)
		fprintf(stderr, "gpumem fuzz: re-parse: %s\n%.2000s\n", err, text);
	FUZZ_CHECK(rv == 0, "what gpumem_json_write wrote does not parse");
	FUZZ_CHECK(json_object_equal(v, again), "the document changed on the way:\n%.2000s", text);
	json_object_put(again);
	free(text);
}

/*
 * The head line's rows (report_head.c) of any document taken as a check:
 * either a message, or an array of objects, one per device, that writes
 * and parses back; and every figure gpumem_json_number writes reads back
 * as the same double.
 */
static void head_rows(struct json_object *check)
{
	struct json_object *rows = (struct json_object *)&rows, *again;
	char err[128];
	double d;

	if (gpumem_report_rows_of(check, &rows, err, sizeof(err)) < 0) {
		FUZZ_CHECK(rows == NULL && err[0], "rows_of failed without a message");
		return;
	}
	FUZZ_CHECK(gpumem_json_is(rows, json_type_array), "rows is no array");
	FUZZ_CHECK(gpumem_json_len(rows) == gpumem_json_len(gpumem_json_get(check, "devices")),
		   "a row per device");
	for (size_t i = 0; i < gpumem_json_len(rows); i++)
		FUZZ_CHECK(gpumem_json_is(gpumem_json_get(gpumem_json_at(rows, i), "metrics"),
					  json_type_object), "row %zu has no metrics", i);
	round_trip(rows, GPUMEM_JSON_SPACED);
	json_object_put(rows);
	if (gpumem_json_is(check, json_type_double)) {
		d = json_object_get_double(check);
		again = gpumem_json_number(d);
		FUZZ_CHECK(again && strtod(gpumem_json_text(again), NULL) == d,
			   "gpumem_json_number(%.17g) wrote %s", d, gpumem_json_text(again));
		json_object_put(again);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *v = (struct json_object *)&v;       /* not NULL before */
	char err[256];
	size_t n;
	int rv;

	memset(err, 'x', sizeof(err));
	rv = gpumem_json_parse_report((const char *)data, size, &v, err, sizeof(err));
	FUZZ_CHECK(memchr(err, 0, sizeof(err)) != NULL, "unterminated error message");
	if (rv != 0) {
		FUZZ_CHECK(rv == -1, "rv %d", rv);
		FUZZ_CHECK(err[0] != '\0', "error without a message");
		FUZZ_CHECK(v == NULL, "failed parse left a value");
		return 0;
	}
	FUZZ_CHECK(err[0] == '\0', "success with message '%s'", err);
	n = check_value(v, 0);
	FUZZ_CHECK(n <= GPUMEM_REPORT_JSON_MAX_VALUES, "%zu values", n);
	round_trip(v, GPUMEM_JSON_COMPACT);
	round_trip(v, GPUMEM_JSON_SPACED);
	head_rows(v);
	head_rows(gpumem_json_get(v, "check"));
	json_object_put(v);
	return 0;
}
