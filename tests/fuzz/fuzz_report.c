/*
 * libFuzzer target: the JSON reader of `gpumem report` (report_json.c).
 *
 * Report files sit in a directory that every node writes and jobs can
 * influence, and the reader is gpumem's own JSON parser, so it gets what
 * the policy parser gets: bytes -> gpumem_report_json_parse; an error
 * leaves an empty value and a "line L, column C: ..." message; a document
 * respects the depth and value caps, holds only valid UTF-8 strings
 * without NUL and finite numbers; gpumem_report_jget finds the first of
 * duplicate keys; and what gpumem_report_json_str / _num write of it
 * parses back to the same document (numbers to the 10 digits _num keeps).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "report.h"

/* Valid UTF-8, the same rules as the parser's (no overlongs, surrogates). */
static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		uint32_t cp;
		size_t need;

		if (*s < 0x80) {
			s++;
			continue;
		}
		if ((*s & 0xe0) == 0xc0) { need = 1; cp = *s & 0x1f; }
		else if ((*s & 0xf0) == 0xe0) { need = 2; cp = *s & 0x0f; }
		else if ((*s & 0xf8) == 0xf0) { need = 3; cp = *s & 0x07; }
		else return 0;
		for (size_t k = 1; k <= need; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[k] & 0x3f);
		}
		if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
		    (need == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += need + 1;
	}
	return 1;
}

/* Check one value and below; returns how many values it holds. */
static size_t check_value(const struct gpumem_report_jval *v, int depth)
{
	size_t count = 1;

	switch (v->type) {
	case GPUMEM_REPORT_JNULL:
		break;
	case GPUMEM_REPORT_JBOOL:
		FUZZ_CHECK(v->boolean == 0 || v->boolean == 1, "boolean %d", v->boolean);
		break;
	case GPUMEM_REPORT_JNUM:
		FUZZ_CHECK(isfinite(v->num), "number %g", v->num);
		break;
	case GPUMEM_REPORT_JSTR:
		FUZZ_CHECK(v->str && utf8_ok((const unsigned char *)v->str), "string not UTF-8");
		break;
	case GPUMEM_REPORT_JARR:
	case GPUMEM_REPORT_JOBJ:
		FUZZ_CHECK(depth < GPUMEM_REPORT_JSON_MAX_DEPTH, "depth %d", depth + 1);
		FUZZ_CHECK(v->n == 0 || v->items, "%zu items, no array", v->n);
		FUZZ_CHECK((v->type == GPUMEM_REPORT_JOBJ) == (v->keys != NULL) || v->n == 0,
			   "keys of a %s", v->type == GPUMEM_REPORT_JOBJ ? "object" : "array");
		for (size_t i = 0; i < v->n; i++) {
			if (v->type == GPUMEM_REPORT_JOBJ) {
				const struct gpumem_report_jval *first;
				size_t j;

				FUZZ_CHECK(v->keys[i] && utf8_ok((const unsigned char *)v->keys[i]),
					   "key %zu", i);
				/* jget: the first member of that name. */
				for (j = 0; strcmp(v->keys[j], v->keys[i]) != 0; j++)
					;
				first = gpumem_report_jget(v, v->keys[i]);
				FUZZ_CHECK(first == &v->items[j], "jget of key %zu", i);
			}
			count += check_value(&v->items[i], depth + 1);
		}
		break;
	default:
		FUZZ_CHECK(0, "type %d", (int)v->type);
	}
	return count;
}

/* Write v with the reader's own writers for strings and numbers. */
static void emit(FILE *f, const struct gpumem_report_jval *v)
{
	switch (v->type) {
	case GPUMEM_REPORT_JNULL: fputs("null", f); break;
	case GPUMEM_REPORT_JBOOL: fputs(v->boolean ? "true" : "false", f); break;
	case GPUMEM_REPORT_JNUM: gpumem_report_json_num(f, v->num); break;
	case GPUMEM_REPORT_JSTR: gpumem_report_json_str(f, v->str); break;
	case GPUMEM_REPORT_JARR:
	case GPUMEM_REPORT_JOBJ:
		fputc(v->type == GPUMEM_REPORT_JOBJ ? '{' : '[', f);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				fputc(',', f);
			if (v->type == GPUMEM_REPORT_JOBJ) {
				gpumem_report_json_str(f, v->keys[i]);
				fputc(':', f);
			}
			emit(f, &v->items[i]);
		}
		fputc(v->type == GPUMEM_REPORT_JOBJ ? '}' : ']', f);
		break;
	}
}

static void check_same(const struct gpumem_report_jval *a, const struct gpumem_report_jval *b)
{
	FUZZ_CHECK(a->type == b->type, "type %d became %d", (int)a->type, (int)b->type);
	switch (a->type) {
	case GPUMEM_REPORT_JBOOL:
		FUZZ_CHECK(a->boolean == b->boolean, "boolean");
		break;
	case GPUMEM_REPORT_JNUM:
		/* _num writes integers exactly and the rest with %.10g. */
		FUZZ_CHECK(a->num == b->num || fabs(a->num - b->num) <= 1e-9 * fabs(a->num),
			   "number %.17g became %.17g", a->num, b->num);
		break;
	case GPUMEM_REPORT_JSTR:
		FUZZ_CHECK(strcmp(a->str, b->str) == 0, "string '%s' became '%s'", a->str, b->str);
		break;
	case GPUMEM_REPORT_JARR:
	case GPUMEM_REPORT_JOBJ:
		FUZZ_CHECK(a->n == b->n, "%zu items became %zu", a->n, b->n);
		for (size_t i = 0; i < a->n; i++) {
			if (a->type == GPUMEM_REPORT_JOBJ)
				FUZZ_CHECK(strcmp(a->keys[i], b->keys[i]) == 0, "key '%s' became '%s'",
					   a->keys[i], b->keys[i]);
			check_same(&a->items[i], &b->items[i]);
		}
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct gpumem_report_jval empty;
	struct gpumem_report_jval v, again;
	char err[256], *text = NULL;
	size_t tlen = 0, n;
	FILE *f;
	int rv;

	memset(err, 'x', sizeof(err));
	rv = gpumem_report_json_parse((const char *)data, size, &v, err, sizeof(err));
	FUZZ_CHECK(memchr(err, 0, sizeof(err)) != NULL, "unterminated error message");
	if (rv != 0) {
		FUZZ_CHECK(rv == -1, "rv %d", rv);
		FUZZ_CHECK(err[0] != '\0', "error without a message");
#ifdef FUZZ_TOLERATE_REPORT_ERROR_VALUE
		/* The type may stay set; nothing may stay allocated. */
		FUZZ_CHECK(!v.str && !v.items && !v.keys && !v.n, "failed parse left a value");
#else
		FUZZ_CHECK(memcmp(&v, &empty, sizeof(v)) == 0, "failed parse left a value (type %d)",
			   (int)v.type);
#endif
		/* "needs no free", but freeing the empty value is harmless. */
		gpumem_report_json_free(&v);
		return 0;
	}
	FUZZ_CHECK(err[0] == '\0', "success with message '%s'", err);
	n = check_value(&v, 0);
	FUZZ_CHECK(n <= GPUMEM_REPORT_JSON_MAX_VALUES, "%zu values", n);

	f = open_memstream(&text, &tlen);
	FUZZ_CHECK(f != NULL, "open_memstream");
	emit(f, &v);
	FUZZ_CHECK(fclose(f) == 0, "fclose");
	rv = gpumem_report_json_parse(text, tlen, &again, err, sizeof(err));
#ifdef FUZZ_TOLERATE_REPORT_NUM_RANGE
	if (rv != 0 && strstr(err, "number out of range")) {
		free(text);
		gpumem_report_json_free(&v);
		return 0;
	}
#endif
	if (rv != 0)
		fprintf(stderr, "gpumem fuzz: re-parse: %s\n%.2000s\n", err, text);
	FUZZ_CHECK(rv == 0, "what json_str/json_num wrote does not parse");
	check_same(&v, &again);
	gpumem_report_json_free(&again);
	free(text);
	gpumem_report_json_free(&v);
	FUZZ_CHECK(memcmp(&v, &empty, sizeof(v)) == 0, "free did not reset the value");
	return 0;
}
