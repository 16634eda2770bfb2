/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem's one JSON module, on libjson-c: reading reports, check documents
 * and forwarded policies, and writing reports, check documents, report rows
 * and policies.  Every reader and writer of the project goes through here,
 * so there is one set of caps, one string escaper and one number format.
 *
 * Reading: json_tokener_new_ex(max_depth) with JSON_TOKENER_STRICT (a
 * reader of many files keeps one tokener: gpumem_json_parse_with).  What
 * json-c does not do, and how it is done:
 *  - Byte cap: checked here before json-c sees a byte.
 *  - Value cap: json-c has none.  Before parsing, one linear pass counts
 *    '[', '{' and ',' outside strings, which bounds the number of values
 *    from above (exactly, but for empty containers), and refuses the text
 *    past the cap, so a hostile file never makes json-c allocate more.
 *  - Raw control characters and NUL bytes: json-c's strict mode lets a tab
 *    through in a string; the same pass refuses them, as RFC 8259 does.
 *  - UTF-8: JSON_TOKENER_VALIDATE_UTF8 lets code points past U+10FFFF
 *    through (found by tests/fuzz); the same pass checks every sequence
 *    (no overlongs, surrogates or truncation) and refuses the file, so
 *    json-c's own check (a tenth of a report's parse) is not asked for.
 *  - NaN, Infinity and numbers that overflow (1e400): strict json-c takes
 *    them; a walk after the parse refuses every non-finite number.  It also
 *    turns "\u0000" in a string into U+FFFD (C strings cannot hold NUL).
 *  - Characters beyond ASCII: json-c 0.18's strict mode refuses every byte
 *    above 0x7f in a string; a text
 *    holding any reaches json-c with them as \u escapes (a copy, up to 3x),
 *    on every version, and json-c's offsets are mapped back to the text.
 *  - A UTF-8 byte order mark is skipped (editors write one).
 *  - Positions: json-c gives a byte offset; messages say "line L, column
 *    C: WHAT", the column counted in characters.
 *  - Duplicate keys: json-c keeps the last and cannot say there were two.
 *  - Integers past 64 bits saturate (json-c), "-01" reads as -1 (json-c).
 *
 * Writing: documents are json-c objects; gpumem_json_write walks them.
 * json-c's own serializer cannot serve two cases, so the walk is ours:
 *  - Style: json-c has "plain" ({"a":1}) and "spaced" ({ "a": 1 }); the
 *    report, its rows and the policy are documented and tested in
 *    {"a": 1, "b": [1, 2]}.  The walk writes the punctuation of either.
 *  - Strings: json-c writes invalid UTF-8 through (the document is then not
 *    JSON) and escapes '/'; gpumem_json_write_string escapes what JSON
 *    requires plus DEL, and writes U+FFFD for every invalid byte, so a
 *    hostname or driver message can never break a document.
 * Numbers are json-c's: gpumem_json_fixed keeps a figure's decimals (the
 * check's "%.2f") through json_object_new_double_s; a NaN or infinity
 * becomes null.  The walk writes a number's text itself (an integer with
 * PRId64, a double by the text json-c keeps with it), as json-c would,
 * without json-c's buffer per number: 100,000 report rows are 4 million.
 */
#ifndef GPUMEM_JSON_H
#define GPUMEM_JSON_H
#include <stddef.h>
#include <stdio.h>
#include <json-c/json.h>

/* What a parse may take: bytes, nesting, values; 'what' names it in messages. */
struct gpumem_json_caps {
	size_t max_bytes;
	int max_depth;
	size_t max_values;
	const char *what;               /* "a report": what too many values are not */
};

/*
 * Parse one strict JSON document (RFC 8259) under CAPS.  0 and *out (the
 * caller puts it with json_object_put; a JSON null is *out == NULL), or -1
 * with "line L, column C: WHAT" (or "empty file", "larger than ...") in err.
 */
int gpumem_json_parse(const char *buf, size_t len, const struct gpumem_json_caps *caps,
		      struct json_object **out, char *err, size_t errlen);
/*
 * The same with a tokener the caller keeps between documents (*keep NULL
 * at first; json_tokener_free it at the end): a reader of thousands of
 * files makes one, not one per file.
 */
int gpumem_json_parse_with(struct json_tokener **keep, const char *buf, size_t len,
			   const struct gpumem_json_caps *caps, struct json_object **out,
			   char *err, size_t errlen);
/* A report and a gpumem-check document under their caps: report.h. */

/* ------------------------------------------------------------ reading */
/* Member KEY of an object; NULL when absent, null, or OBJ is no object. */
struct json_object *gpumem_json_get(struct json_object *obj, const char *key);
/* Is V of type T (json_type_null for NULL)? */
int gpumem_json_is(struct json_object *v, enum json_type t);
/* A string member, or NULL when absent or not a string. */
const char *gpumem_json_str(struct json_object *obj, const char *key);
/* A number member: 0 and *out, or -1 when absent or not a number. */
int gpumem_json_num(struct json_object *obj, const char *key, double *out);
/*
 * The text of a scalar as read: a string's value, a number's own spelling
 * ("4100.0"), "true", "false"; NULL for null, an array or an object.
 */
const char *gpumem_json_text(struct json_object *v);
/* Items of an array (0 for anything else) and item I. */
size_t gpumem_json_len(struct json_object *arr);
struct json_object *gpumem_json_at(struct json_object *arr, size_t i);

/* ------------------------------------------------------------ building */
/* Every constructor returns NULL (JSON null) for NULL or a non-finite value. */
struct json_object *gpumem_json_string(const char *s);
/* S cut to MAX_CHARS characters (UTF-8, at a character boundary), or NULL for NULL. */
struct json_object *gpumem_json_string_cut(const char *s, size_t max_chars);
/* A figure with DECIMALS digits after the point, written as such. */
struct json_object *gpumem_json_fixed(double v, int decimals);
/* A figure in printf format FMT ("%.6g"), written as such. */
struct json_object *gpumem_json_fmt(double v, const char *fmt);
/* An integer exactly, any other number so it reads back the same (two decimals where that is exact, else %.17g). */
struct json_object *gpumem_json_number(double v);
struct json_object *gpumem_json_int(long long v);
struct json_object *gpumem_json_bool(int v);
/* Add member KEY (V may be NULL: null); the object takes V. */
void gpumem_json_add(struct json_object *obj, const char *key, struct json_object *v);

/* ------------------------------------------------------------ writing */
enum gpumem_json_style {
	GPUMEM_JSON_COMPACT,            /* {"a":1,"b":[1,2]} (gpumem-check) */
	GPUMEM_JSON_SPACED,             /* {"a": 1, "b": [1, 2]} (reports, rows, policy) */
};
/* Write V (NULL: null); -1 when the stream failed. */
int gpumem_json_write(FILE *f, struct json_object *v, enum gpumem_json_style style);
/* The same into a malloc'd string with a final newline, or NULL. */
char *gpumem_json_dump(struct json_object *v, enum gpumem_json_style style);
/* One JSON string (NULL: null), UTF-8 checked; the module's one escaper. */
void gpumem_json_write_string(FILE *f, const char *s);
#endif
