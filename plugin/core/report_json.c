/*
 * A small, strict JSON reader for report files.  Why not yamltree: reports
 * embed whole gpumem-check documents, well past its 64 KiB and 4096-node
 * caps, and YAML rules refuse valid JSON (a tab in indentation, a string
 * over 1024 bytes).  Everything is bounded: input size, depth and the
 * number of values, so a garbage file costs one linear scan.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"
#include "report.h"

struct jp {
	const unsigned char *s;
	size_t len, pos;
	int depth;
	size_t nvals;
	char *err;
	size_t errlen;
	int failed;
	int max_depth;
	size_t max_values;
	const char *what;       /* "a report": what too many values are not */
};

/* Record the first error only, with the place it happened. */
__attribute__((format(printf, 2, 3)))
static void jp_error(struct jp *p, const char *fmt, ...)
{
	size_t line = 1, col = 1, at = p->pos < p->len ? p->pos : p->len;
	char what[256];
	va_list ap;

	if (p->failed)
		return;
	p->failed = 1;
	for (size_t i = 0; i < at; i++) {
		if (p->s[i] == '\n') {
			line++;
			col = 1;
		} else if ((p->s[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "line %zu, column %zu: %s", line, col, what);
}

static void skip_ws(struct jp *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

/* What is at the cursor, for messages: a printable character or a name. */
static const char *here(struct jp *p, char *buf, size_t len)
{
	unsigned char c;

	if (p->pos >= p->len)
		return "end of file (truncated?)";
	c = p->s[p->pos];
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

struct sbuf {
	char *s;
	size_t n, cap;
};

static int sb_put(struct sbuf *b, const void *data, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		char *s;

		while (cap < b->n + n + 1)
			cap *= 2;
		s = realloc(b->s, cap);
		if (s == NULL)
			return -1;
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->n, data, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

static int sb_utf8(struct sbuf *b, uint32_t cp)
{
	unsigned char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | (cp >> 6));
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (cp >> 12));
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | (cp >> 18));
		u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return sb_put(b, u, n);
}

static int hex4(const unsigned char *s, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
		else return -1;
	}
	*out = v;
	return 0;
}


/*
 * A string at the opening quote.  Invalid UTF-8, lone surrogates and \u0000
 * become U+FFFD rather than failing the file: one odd byte in a reason must
 * not hide a whole report, and C strings cannot hold NUL.
 */
static int parse_string(struct jp *p, char **out)
{
	struct sbuf b = { 0 };

	p->pos++;
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len) {
			jp_error(p, "unterminated string (truncated?)");
			goto fail;
		}
		c = p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20) {
			jp_error(p, "control character 0x%02x in a string", c);
			goto fail;
		}
		if (c == '\\') {
			unsigned char e;

			if (p->pos + 1 >= p->len) {
				jp_error(p, "unterminated string (truncated?)");
				goto fail;
			}
			e = p->s[p->pos + 1];
			if (e == 'u') {
				uint32_t cp, lo;

				if (p->pos + 6 > p->len || hex4(p->s + p->pos + 2, &cp) < 0) {
					jp_error(p, "bad \\u escape");
					goto fail;
				}
				p->pos += 6;
				if (cp >= 0xd800 && cp <= 0xdbff && p->pos + 6 <= p->len &&
				    p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u' &&
				    hex4(p->s + p->pos + 2, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p->pos += 6;
				} else if ((cp >= 0xd800 && cp <= 0xdfff) || cp == 0) {
					cp = 0xfffd;
				}
				if (sb_utf8(&b, cp) < 0)
					goto oom;
				continue;
			}
			switch (e) {
			case '"': c = '"'; break;
			case '\\': c = '\\'; break;
			case '/': c = '/'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			default:
				jp_error(p, "bad escape '\\%c' in a string", e > 0x20 && e < 0x7f ? e : '?');
				goto fail;
			}
			if (sb_put(&b, &c, 1) < 0)
				goto oom;
			p->pos += 2;
			continue;
		}
		if (c < 0x80) {
			/* Copy a run of plain ASCII at once. */
			size_t end = p->pos;

			while (end < p->len && p->s[end] >= 0x20 && p->s[end] < 0x80 &&
			       p->s[end] != '"' && p->s[end] != '\\')
				end++;
			if (sb_put(&b, p->s + p->pos, end - p->pos) < 0)
				goto oom;
			p->pos = end;
		} else {
			size_t n = gpumem_utf8_len(p->s + p->pos, p->len - p->pos);

			if (n == 0) {
				if (sb_utf8(&b, 0xfffd) < 0)
					goto oom;
				p->pos++;
			} else {
				if (sb_put(&b, p->s + p->pos, n) < 0)
					goto oom;
				p->pos += n;
			}
		}
	}
	if (b.s == NULL && sb_put(&b, "", 0) < 0)
		goto oom;
	*out = b.s;
	return 0;
oom:
	jp_error(p, "out of memory");
fail:
	free(b.s);
	return -1;
}

static int parse_number(struct jp *p, double *out)
{
	size_t start = p->pos, i = p->pos;
	char tmp[64], *end;
	double v;

	if (i < p->len && p->s[i] == '-')
		i++;
	if (i < p->len && p->s[i] == '0') {
		i++;
	} else if (i < p->len && p->s[i] >= '1' && p->s[i] <= '9') {
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	} else {
		p->pos = i;
		jp_error(p, "bad number");
		return -1;
	}
	if (i < p->len && p->s[i] == '.') {
		i++;
		if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
			p->pos = i;
			jp_error(p, "bad number: digits must follow '.'");
			return -1;
		}
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
			p->pos = i;
			jp_error(p, "bad number: digits must follow the exponent");
			return -1;
		}
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	if (i - start >= sizeof(tmp)) {
		jp_error(p, "number longer than %zu characters", sizeof(tmp) - 1);
		return -1;
	}
	memcpy(tmp, p->s + start, i - start);
	tmp[i - start] = '\0';
	v = strtod(tmp, &end);
	if (*end != '\0' || !isfinite(v)) {
		jp_error(p, "number out of range");
		return -1;
	}
	p->pos = i;
	*out = v;
	return 0;
}

static int literal(struct jp *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return -1;
	p->pos += n;
	return 0;
}

void gpumem_report_json_free(struct gpumem_report_jval *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n; i++) {
		gpumem_report_json_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

static int parse_value(struct jp *p, struct gpumem_report_jval *v);

/* Append a parsed item (and its key, for objects) to a container. */
static int append(struct jp *p, struct gpumem_report_jval *c, struct gpumem_report_jval *item,
		  char *key)
{
	/*
	 * Grow by doubling: a long array must not cost a copy per item.  The
	 * value cap keeps far below it, but never let a size wrap around.
	 */
	if (c->n == c->cap) {
		struct gpumem_report_jval *items;
		size_t cap;

		if (c->cap > SIZE_MAX / 2 / sizeof(*items) ||
		    c->cap > SIZE_MAX / 2 / sizeof(*c->keys))
			goto oom;
		cap = c->cap ? c->cap * 2 : 4;
		items = realloc(c->items, cap * sizeof(*items));
		if (items == NULL)
			goto oom;
		c->items = items;
		if (c->type == GPUMEM_REPORT_JOBJ) {
			char **keys = realloc(c->keys, cap * sizeof(*keys));

			if (keys == NULL)
				goto oom;
			c->keys = keys;
		}
		c->cap = cap;
	}
	if (c->type == GPUMEM_REPORT_JOBJ)
		c->keys[c->n] = key;
	c->items[c->n++] = *item;
	return 0;
oom:
	jp_error(p, "out of memory");
	gpumem_report_json_free(item);
	free(key);
	return -1;
}

static int parse_container(struct jp *p, struct gpumem_report_jval *v, int is_obj)
{
	char close = is_obj ? '}' : ']', buf[32];

	v->type = is_obj ? GPUMEM_REPORT_JOBJ : GPUMEM_REPORT_JARR;
	if (++p->depth > p->max_depth) {
		jp_error(p, "nesting deeper than %d levels", p->max_depth);
		return -1;
	}
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		struct gpumem_report_jval item = { 0 };
		char *key = NULL;

		skip_ws(p);
		if (is_obj) {
			if (p->pos >= p->len || p->s[p->pos] != '"') {
				jp_error(p, "expected a string key, found %s", here(p, buf, sizeof(buf)));
				return -1;
			}
			if (parse_string(p, &key) < 0)
				return -1;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				jp_error(p, "expected ':' after key \"%.40s\", found %s", key,
					 here(p, buf, sizeof(buf)));
				free(key);
				return -1;
			}
			p->pos++;
		}
		if (parse_value(p, &item) < 0) {
			free(key);
			return -1;
		}
		if (append(p, v, &item, key) < 0)
			return -1;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			break;
		}
		jp_error(p, "expected ',' or '%c', found %s", close, here(p, buf, sizeof(buf)));
		return -1;
	}
	p->depth--;
	return 0;
}

static int parse_one(struct jp *p, struct gpumem_report_jval *v)
{
	char buf[32];
	unsigned char c;

	memset(v, 0, sizeof(*v));
	if (p->pos >= p->len) {
		jp_error(p, "expected a value, found end of file (truncated?)");
		return -1;
	}
	if (++p->nvals > p->max_values) {
		jp_error(p, "more than %zu values: not %s", p->max_values, p->what);
		return -1;
	}
	c = p->s[p->pos];
	switch (c) {
	case '{':
	case '[':
		if (parse_container(p, v, c == '{') < 0) {
			gpumem_report_json_free(v);
			return -1;
		}
		return 0;
	case '"':
		if (parse_string(p, &v->str) < 0)
			return -1;      /* *v stays empty, as report.h says */
		v->type = GPUMEM_REPORT_JSTR;
		return 0;
	case 't':
	case 'f':
	case 'n':
		if (literal(p, "true") == 0) {
			v->type = GPUMEM_REPORT_JBOOL;
			v->boolean = 1;
			return 0;
		}
		if (literal(p, "false") == 0) {
			v->type = GPUMEM_REPORT_JBOOL;
			return 0;
		}
		if (literal(p, "null") == 0) {
			v->type = GPUMEM_REPORT_JNULL;
			return 0;
		}
		break;
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			if (parse_number(p, &v->num) < 0) {
				v->num = 0;
				return -1;
			}
			v->type = GPUMEM_REPORT_JNUM;
			return 0;
		}
		break;
	}
	jp_error(p, "expected a value, found %s", here(p, buf, sizeof(buf)));
	return -1;
}

/* A value and, when it parses, where it was in the text. */
static int parse_value(struct jp *p, struct gpumem_report_jval *v)
{
	size_t at;

	skip_ws(p);
	at = p->pos;
	if (parse_one(p, v) < 0)
		return -1;
	v->at = at;
	v->len = p->pos - at;
	return 0;
}

/* One document of at most max_bytes, under the depth and value caps of P. */
static int parse_doc(struct jp *p, size_t max_bytes, struct gpumem_report_jval *out)
{
	char what[32];

	memset(out, 0, sizeof(*out));
	if (p->errlen)
		p->err[0] = '\0';
	if (p->len > max_bytes) {
		snprintf(p->err, p->errlen, "larger than the %zu-byte limit", max_bytes);
		return -1;
	}
	/* A UTF-8 byte order mark is not JSON, but editors write one. */
	if (p->len >= 3 && !memcmp(p->s, "\xef\xbb\xbf", 3))
		p->pos = 3;
	skip_ws(p);
	if (p->pos >= p->len) {
		snprintf(p->err, p->errlen, "empty file");
		return -1;
	}
	if (parse_value(p, out) < 0)
		return -1;
	skip_ws(p);
	if (p->pos < p->len) {
		jp_error(p, "unexpected %s after the end of the document",
			 here(p, what, sizeof(what)));
		gpumem_report_json_free(out);
		return -1;
	}
	return 0;
}

int gpumem_report_json_parse(const char *buf, size_t len, struct gpumem_report_jval *out,
			     char *err, size_t errlen)
{
	struct jp p = { (const unsigned char *)buf, len, 0, 0, 0, err, errlen, 0,
			GPUMEM_REPORT_JSON_MAX_DEPTH, GPUMEM_REPORT_JSON_MAX_VALUES, "a report" };

	return parse_doc(&p, GPUMEM_REPORT_MAX_FILE_BYTES, out);
}

int gpumem_check_json_parse(const char *buf, size_t len, struct gpumem_report_jval *out,
			    char *err, size_t errlen)
{
	struct jp p = { (const unsigned char *)buf, len, 0, 0, 0, err, errlen, 0,
			GPUMEM_CHECK_JSON_MAX_DEPTH, GPUMEM_CHECK_JSON_MAX_VALUES,
			"a gpumem-check document" };
	const char *schema;

	if (parse_doc(&p, GPUMEM_CHECK_MAX_BYTES, out) < 0)
		return -1;
	schema = gpumem_report_jstr(out, "schema");
	if (out->type != GPUMEM_REPORT_JOBJ || schema == NULL ||
	    strcmp(schema, "gpumem-check/1") != 0) {
		if (out->type != GPUMEM_REPORT_JOBJ)
			snprintf(err, errlen, "not a gpumem-check/1 document: not an object");
		else if (schema == NULL)
			snprintf(err, errlen, "not a gpumem-check/1 document: no \"schema\" string");
		else
			snprintf(err, errlen, "not a gpumem-check/1 document: schema \"%.60s\"",
				 schema);
		gpumem_report_json_free(out);
		return -1;
	}
	return 0;
}

const char *gpumem_report_jtext(const char *buf, const struct gpumem_report_jval *v,
				char *tmp, size_t tmplen)
{
	if (v == NULL || tmplen == 0)
		return NULL;
	switch (v->type) {
	case GPUMEM_REPORT_JSTR:
		return v->str;
	case GPUMEM_REPORT_JNULL:
	case GPUMEM_REPORT_JBOOL:
	case GPUMEM_REPORT_JNUM:
		/* A literal or a number of under 64 characters: parse_number's cap. */
		snprintf(tmp, tmplen, "%.*s", (int)(v->len < tmplen ? v->len : tmplen - 1),
			 buf + v->at);
		return tmp;
	default:
		return NULL;
	}
}

const struct gpumem_report_jval *gpumem_report_jget(const struct gpumem_report_jval *obj,
						    const char *key)
{
	if (obj == NULL || obj->type != GPUMEM_REPORT_JOBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const char *gpumem_report_jstr(const struct gpumem_report_jval *obj, const char *key)
{
	const struct gpumem_report_jval *v = gpumem_report_jget(obj, key);

	return v && v->type == GPUMEM_REPORT_JSTR ? v->str : NULL;
}

int gpumem_report_jnum(const struct gpumem_report_jval *obj, const char *key, double *out)
{
	const struct gpumem_report_jval *v = gpumem_report_jget(obj, key);

	if (v == NULL || v->type != GPUMEM_REPORT_JNUM)
		return -1;
	*out = v->num;
	return 0;
}

void gpumem_report_json_str(FILE *f, const char *s)
{
	if (s == NULL) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				fprintf(f, "\\u%04x", *c);
			else
				fputc(*c, f);
		}
	}
	fputc('"', f);
}

void gpumem_report_json_num(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
		fprintf(f, "%lld", (long long)v);
	else
		fprintf(f, "%.17g", v);     /* what is written must read back the same */
}
