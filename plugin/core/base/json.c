/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The JSON module (json.h): strict, capped parsing on json-c, member
 * access, constructors, and the one writer and string escaper.  json.h says
 * what json-c does and what is done here around it, and why.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "json.h"
#include "units.h"

/* ------------------------------------------------------------ parsing */
/* "line L, column C: WHAT" for byte offset AT of S, columns in characters. */
__attribute__((format(printf, 5, 6)))
static void error_at(const char *s, size_t at, char *err, size_t errlen, const char *fmt, ...)
{
	size_t line = 1, col = 1;
	char what[256];
	va_list ap;

	for (size_t i = 0; i < at; i++) {
		if (s[i] == '\n') {
			line++;
			col = 1;
		} else if ((s[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "line %zu, column %zu: %s", line, col, what);
}

/* What is at S[AT], for messages: a printable character or a byte. */
static const char *found(const char *s, size_t len, size_t at, char *buf, size_t blen)
{
	unsigned char c;

	if (at >= len)
		return "end of file (truncated?)";
	c = (unsigned char)s[at];
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, blen, "'%c'", c);
	else
		snprintf(buf, blen, "byte 0x%02x", c);
	return buf;
}

/*
 * The pass before json-c: NUL bytes, invalid UTF-8 and raw control
 * characters in strings are refused, and '[', '{' and ',' outside strings are counted: at least
 * as many as the values less one, so the value cap holds before json-c
 * allocates anything.
 */
static int prescan(const char *s, size_t len, const struct gpumem_json_caps *caps,
		   char *err, size_t errlen)
{
	size_t count = 1;
	int in_str = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == 0) {
			error_at(s, i, err, errlen, "NUL byte");
			return -1;
		}
		if (c >= 0x80) {
			size_t n = gpumem_utf8_len((const unsigned char *)s + i, len - i);

			if (n == 0) {
				error_at(s, i, err, errlen, "invalid UTF-8 (byte 0x%02x)", c);
				return -1;
			}
			i += n - 1;
			continue;
		}
		if (in_str) {
			if (c == '\\' && i + 1 < len && s[i + 1] != 0)
				i++;
			else if (c == '"')
				in_str = 0;
			else if (c < 0x20) {
				error_at(s, i, err, errlen, "control character 0x%02x in a string", c);
				return -1;
			}
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '[' || c == '{' || c == ',')
			count++;
		if (count > caps->max_values) {
			error_at(s, i, err, errlen, "more than %zu values: not %s", caps->max_values,
				 caps->what);
			return -1;
		}
	}
	return 0;
}

/* json-c's error at byte AT (of S, LEN long) in this module's words. */
static void parse_error(const char *s, size_t len, size_t at, enum json_tokener_error e,
			const struct gpumem_json_caps *caps, char *err, size_t errlen)
{
	char buf[32];

	switch (e) {
	case json_tokener_error_depth:
		error_at(s, at, err, errlen, "nesting deeper than %d levels", caps->max_depth);
		return;
	case json_tokener_continue:
	case json_tokener_error_parse_eof:
		error_at(s, len, err, errlen, "unexpected end of file (truncated?)");
		return;
	case json_tokener_error_parse_boolean:
	case json_tokener_error_parse_null:
	case json_tokener_error_parse_unexpected:
		/* A word that is no literal: name it where it starts. */
		if (at < len && ((s[at] >= 'a' && s[at] <= 'z') || (s[at] >= 'A' && s[at] <= 'Z') ||
				 e != json_tokener_error_parse_unexpected)) {
			while (at > 0 && ((s[at - 1] >= 'a' && s[at - 1] <= 'z') ||
					  (s[at - 1] >= 'A' && s[at - 1] <= 'Z')))
				at--;
			error_at(s, at, err, errlen, "expected a value, found %s",
				 found(s, len, at, buf, sizeof(buf)));
			return;
		}
		error_at(s, at, err, errlen, "unexpected %s", found(s, len, at, buf, sizeof(buf)));
		return;
	default:
		error_at(s, at, err, errlen, "%s, found %s", json_tokener_error_desc(e),
			 found(s, len, at, buf, sizeof(buf)));
	}
}

/*
 * After json-c: every number finite; "\u0000" (json-c keeps it, C strings
 * cannot) becomes U+FFFD.  0, or -1 with a message.
 */
static int post_check(struct json_object *v, char *err, size_t errlen)
{
	switch (json_object_get_type(v)) {
	case json_type_double:
		if (!isfinite(json_object_get_double(v))) {
			snprintf(err, errlen, "number out of range: %.40s", json_object_get_string(v));
			return -1;
		}
		return 0;
	case json_type_string: {
		const char *s = json_object_get_string(v);
		size_t n = (size_t)json_object_get_string_len(v), k = 0;
		char *fixed;

		if (strlen(s) == n)
			return 0;
		fixed = malloc(n * 3 + 1);
		if (fixed == NULL)
			goto oom;
		for (size_t i = 0; i < n; i++) {
			if (s[i])
				fixed[k++] = s[i];
			else
				k += (size_t)sprintf(fixed + k, "\xef\xbf\xbd");
		}
		fixed[k] = '\0';
		k = (size_t)json_object_set_string(v, fixed);
		free(fixed);
		if (!k)
			goto oom;
		return 0;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (post_check(json_object_array_get_idx(v, i), err, errlen) < 0)
				return -1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(v, key, item) {
			(void)key;
			if (post_check(item, err, errlen) < 0)
				return -1;
		}
		return 0;
	}
	default:
		return 0;
	}
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

int gpumem_json_parse(const char *buf, size_t len, const struct gpumem_json_caps *caps,
		      struct json_object **out, char *err, size_t errlen)
{
	return gpumem_json_parse_with(NULL, buf, len, caps, out, err, errlen);
}

/* A tokener kept by the caller (*keep) is reset, not made anew: one per reader. */
static struct json_tokener *tokener(struct json_tokener **keep, int depth)
{
	if (keep && *keep) {
		json_tokener_reset(*keep);
		return *keep;
	}
	if (keep)
		return *keep = json_tokener_new_ex(depth);
	return json_tokener_new_ex(depth);
}

int gpumem_json_parse_with(struct json_tokener **keep, const char *buf, size_t len,
			   const struct gpumem_json_caps *caps, struct json_object **out,
			   char *err, size_t errlen)
{
	struct json_tokener *tok = NULL;
	struct json_object *v;
	enum json_tokener_error e;
	size_t start = 0, at, tlen;
	const char *text;
	char *esc = NULL;
	int rv = -1;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (len > caps->max_bytes) {
		snprintf(err, errlen, "larger than the %zu-byte limit", caps->max_bytes);
		return -1;
	}
	/* A UTF-8 byte order mark is not JSON, but editors write one. */
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		start = 3;
	while (start < len && (buf[start] == ' ' || buf[start] == '\t' || buf[start] == '\r' ||
			       buf[start] == '\n'))
		start++;
	if (start == len) {
		snprintf(err, errlen, "empty file");
		return -1;
	}
	if (prescan(buf, len, caps, err, errlen) < 0)
		return -1;
	/* json-c's depth is the number of levels it takes (65 took 65: fuzz_report). */
	tok = tokener(keep, caps->max_depth);
	if (tok == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	text = buf + start;
	tlen = len - start;
	/* Characters beyond ASCII (valid UTF-8: prescan) as \u escapes: json.h. */
	if (gpumem_utf8_has_high(text, tlen)) {
		esc = gpumem_utf8_json_escape(text, tlen, &tlen);
		if (esc == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		text = esc;
	}
	/* Not JSON_TOKENER_VALIDATE_UTF8: prescan checked every byte already. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	v = json_tokener_parse_ex(tok, text, (int)tlen);
	e = json_tokener_get_error(tok);
	at = json_tokener_get_parse_end(tok);
	at = start + (esc ? gpumem_utf8_json_unescaped_at(buf + start, len - start, at) : at);
	if (e == json_tokener_continue) {
		/* Only the end of the text completes a number or literal at the top. */
		v = json_tokener_parse_ex(tok, "", 1);
		e = json_tokener_get_error(tok);
		at = len;
	}
	if (e != json_tokener_success) {
		parse_error(buf, len, at, e, caps, err, errlen);
		goto fail;
	}
	if (post_check(v, err, errlen) < 0) {
		json_object_put(v);
		goto fail;
	}
	*out = v;
	rv = 0;
fail:
	free(esc);
	if (keep == NULL)
		json_tokener_free(tok);
	return rv;
}

/* ------------------------------------------------------------ reading */
struct json_object *gpumem_json_get(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;

	if (!gpumem_json_is(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

int gpumem_json_is(struct json_object *v, enum json_type t)
{
	return json_object_get_type(v) == t;
}

const char *gpumem_json_str(struct json_object *obj, const char *key)
{
	struct json_object *v = gpumem_json_get(obj, key);

	return gpumem_json_is(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int gpumem_json_num(struct json_object *obj, const char *key, double *out)
{
	struct json_object *v = gpumem_json_get(obj, key);

	if (!gpumem_json_is(v, json_type_double) && !gpumem_json_is(v, json_type_int))
		return -1;
	*out = json_object_get_double(v);
	return 0;
}

const char *gpumem_json_text(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
	case json_type_double:  /* json-c keeps a parsed number's own text */
	case json_type_int:
	case json_type_boolean:
		return json_object_get_string(v);
	default:
		return NULL;
	}
}

size_t gpumem_json_len(struct json_object *arr)
{
	return gpumem_json_is(arr, json_type_array) ? json_object_array_length(arr) : 0;
}

struct json_object *gpumem_json_at(struct json_object *arr, size_t i)
{
	return i < gpumem_json_len(arr) ? json_object_array_get_idx(arr, i) : NULL;
}

/* ------------------------------------------------------------ building */
struct json_object *gpumem_json_string(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

struct json_object *gpumem_json_string_cut(const char *s, size_t max_chars)
{
	size_t n = 0;

	if (s == NULL)
		return NULL;
	for (size_t c = 0; s[n] && c < max_chars; c++)
		for (n++; ((unsigned char)s[n] & 0xc0) == 0x80; n++)
			;
	return json_object_new_string_len(s, (int)n);
}

struct json_object *gpumem_json_fixed(double v, int decimals)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

struct json_object *gpumem_json_fmt(double v, const char *fmt)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, sizeof(buf), fmt, v);
#pragma GCC diagnostic pop
	return json_object_new_double_s(v, buf);
}

/*
 * V with at most two decimals when that is what V is (the figures of
 * gpumem-check, "%.2f"): n = V x 100 rounded, and n / 100 (one correctly
 * rounded division) gives V back exactly, so the text reads back the same.
 * Integer formatting: 100,000 report rows are 3.5 million figures, and
 * "%.17g" was a sixth of `gpumem report --json` (and wrote 4265.6 as
 * 4265.6000000000004).  0 and the text in buf, or -1.
 */
static int two_decimals(double v, char *buf, size_t len)
{
	long long n, a;

	if (!(v > -1e13 && v < 1e13))
		return -1;
	n = llround(v * 100);
	if ((double)n / 100 != v)
		return -1;
	a = n < 0 ? -n : n;
	if (a % 10)
		snprintf(buf, len, "%s%lld.%02lld", n < 0 ? "-" : "", a / 100, a % 100);
	else
		snprintf(buf, len, "%s%lld.%lld", n < 0 ? "-" : "", a / 100, a % 100 / 10);
	return 0;
}

struct json_object *gpumem_json_number(double v)
{
	char buf[48];

	if (!isfinite(v))
		return NULL;
	if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
		return json_object_new_int64((int64_t)v);
	if (two_decimals(v, buf, sizeof(buf)) == 0)
		return json_object_new_double_s(v, buf);
	return gpumem_json_fmt(v, "%.17g");     /* what is written must read back the same */
}

struct json_object *gpumem_json_int(long long v)
{
	return json_object_new_int64((int64_t)v);
}

struct json_object *gpumem_json_bool(int v)
{
	return json_object_new_boolean(v ? 1 : 0);
}

void gpumem_json_add(struct json_object *obj, const char *key, struct json_object *v)
{
	json_object_object_add(obj, key, v);
}

/* ------------------------------------------------------------ writing */
void gpumem_json_write_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t left;

	if (s == NULL) {
		fputs("null", f);
		return;
	}
	left = strlen(str);
	fputc('"', f);
	while (*s) {
		size_t n = 0;

		/* Plain ASCII goes out as one run: most of a report is. */
		while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
			n++;
		if (n) {
			fwrite(s, 1, n, f);
			s += n;
			left -= n;
			continue;
		}
		switch (*s) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*s < 0x20 || *s == 0x7f) {
				fprintf(f, "\\u%04x", *s);
				break;
			}
			n = gpumem_utf8_len(s, left);
			if (n == 0) {
				fputs("\\ufffd", f);
				break;
			}
			fwrite(s, 1, n, f);
			s += n;
			left -= n;
			continue;
		}
		s++;
		left--;
	}
	fputc('"', f);
}

static void write_value(FILE *f, struct json_object *v, enum gpumem_json_style style)
{
	const char *comma = style == GPUMEM_JSON_SPACED ? ", " : ",";
	const char *colon = style == GPUMEM_JSON_SPACED ? ": " : ":";
	size_t i = 0;

	switch (json_object_get_type(v)) {
	case json_type_null:
		fputs("null", f);
		break;
	case json_type_boolean:
		fputs(json_object_get_boolean(v) ? "true" : "false", f);
		break;
	case json_type_double:
	case json_type_int:
		/* json-c writes numbers, in their own text if they have one. */
		if (gpumem_json_is(v, json_type_double) && !isfinite(json_object_get_double(v)))
			fputs("null", f);
		else if (gpumem_json_is(v, json_type_int) && json_object_get_int64(v) != INT64_MAX)
			fprintf(f, "%" PRId64, json_object_get_int64(v));
		else if (gpumem_json_is(v, json_type_int))   /* json-c keeps past INT64_MAX unsigned */
			fprintf(f, "%" PRIu64, json_object_get_uint64(v));
		else if (json_object_get_userdata(v) != NULL)
			fputs(json_object_get_userdata(v), f);  /* its text (json_object_new_double_s) */
		else
			fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), f);
		break;
	case json_type_string:
		gpumem_json_write_string(f, json_object_get_string(v));
		break;
	case json_type_array:
		fputc('[', f);
		for (i = 0; i < json_object_array_length(v); i++) {
			if (i)
				fputs(comma, f);
			write_value(f, json_object_array_get_idx(v, i), style);
		}
		fputc(']', f);
		break;
	case json_type_object: {
		fputc('{', f);
		json_object_object_foreach(v, key, item) {
			if (i++)
				fputs(comma, f);
			gpumem_json_write_string(f, key);
			fputs(colon, f);
			write_value(f, item, style);
		}
		fputc('}', f);
		break;
	}
	}
}

int gpumem_json_write(FILE *f, struct json_object *v, enum gpumem_json_style style)
{
	write_value(f, v, style);
	return ferror(f) ? -1 : 0;
}

char *gpumem_json_dump(struct json_object *v, enum gpumem_json_style style)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	write_value(f, v, style);
	fputc('\n', f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
