/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The accounting record's transport (acct.h): deflate + base 16 over a
 * lower-case-proof, quote-free, base64-free alphabet; the walk over an
 * AdminComment's segments; the merge that replaces one node's segment and
 * keeps every other byte; the check that sacctmgr would store a value as is;
 * the record's parse (the JSON module, json.h, under the record's caps).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "acct.h"

static const char digits[] = "!#$%&()*,-.:;<>?";

static int digit_value(unsigned char c)
{
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

char *gpumem_acct_encode(const char *json, char *err, size_t errlen)
{
	size_t len = strlen(json);
	uLongf zlen = compressBound(len) + 16;
	unsigned char *z = malloc(zlen);
	char *out = NULL;
	z_stream s = { 0 };

	if (z == NULL || deflateInit2(&s, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, errlen, "cannot start zlib");
		goto fail;
	}
	s.next_in = (unsigned char *)json;
	s.avail_in = (uInt)len;
	s.next_out = z;
	s.avail_out = (uInt)zlen;
	if (deflate(&s, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&s);
		snprintf(err, errlen, "cannot compress the record");
		goto fail;
	}
	zlen = s.total_out;
	deflateEnd(&s);
	if (2 * zlen + 4 > GPUMEM_ACCT_MAX_SEGMENT) {
		snprintf(err, errlen, "record too large: %lu bytes encoded, at most %d",
			 (unsigned long)(2 * zlen + 4), GPUMEM_ACCT_MAX_SEGMENT);
		goto fail;
	}
	out = malloc(2 * zlen + 5);
	if (out == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	strcpy(out, GPUMEM_ACCT_OPEN);
	for (uLongf i = 0; i < zlen; i++) {
		out[2 + 2 * i] = digits[z[i] >> 4];
		out[3 + 2 * i] = digits[z[i] & 15];
	}
	strcpy(out + 2 + 2 * zlen, GPUMEM_ACCT_CLOSE);
fail:
	free(z);
	return out;
}

/* Base 16 -> bytes; -1 and a message naming the first bad character. */
static int unhex(const char *data, size_t len, unsigned char *z, char *err, size_t errlen)
{
	if (len == 0 || len % 2) {
		snprintf(err, errlen, "%s length %zu (an even number of digits is needed)",
			 len ? "odd" : "empty:", len);
		return -1;
	}
	for (size_t i = 0; i < len; i += 2) {
		int hi = digit_value((unsigned char)data[i]);
		int lo = digit_value((unsigned char)data[i + 1]);

		if (hi < 0 || lo < 0) {
			unsigned char c = (unsigned char)data[hi < 0 ? i : i + 1];

			snprintf(err, errlen, "character %s%c%s (0x%02x) at offset %zu is no digit of "
				 "the record's alphabet", isprint(c) ? "'" : "", isprint(c) ? c : '?',
				 isprint(c) ? "'" : "", c, hi < 0 ? i : i + 1);
			return -1;
		}
		z[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static char *inflate_record(const unsigned char *z, size_t zlen, char *err, size_t errlen)
{
	char *json = malloc(GPUMEM_ACCT_MAX_JSON + 1);
	z_stream s = { 0 };
	int rc;

	if (json == NULL || inflateInit2(&s, -15) != Z_OK) {
		snprintf(err, errlen, "out of memory");
		free(json);
		return NULL;
	}
	s.next_in = (unsigned char *)z;
	s.avail_in = (uInt)zlen;
	s.next_out = (unsigned char *)json;
	s.avail_out = GPUMEM_ACCT_MAX_JSON;
	rc = inflate(&s, Z_FINISH);
	if (rc != Z_STREAM_END || s.avail_in != 0) {
		snprintf(err, errlen, "%s", rc == Z_BUF_ERROR && s.avail_out == 0 ?
			 "inflates past the record's cap" : rc == Z_STREAM_END ?
			 "trailing bytes after the compressed record" :
			 "not a compressed record (corrupt or truncated)");
		inflateEnd(&s);
		free(json);
		return NULL;
	}
	json[s.total_out] = '\0';
	inflateEnd(&s);
	if (strlen(json) != s.total_out) {
		snprintf(err, errlen, "the record holds a NUL byte");
		free(json);
		return NULL;
	}
	return json;
}

/* What a record may take: bytes inflated, nesting, values (2 checks of 64 GPUs). */
static const struct gpumem_json_caps record_caps = {
	GPUMEM_ACCT_MAX_JSON, 8, 2048, "an accounting record"
};

int gpumem_acct_parse(const char *json, struct json_object **out, char *err, size_t errlen)
{
	char perr[256], cerr[256];

	*out = NULL;
	if (gpumem_json_parse(json, strlen(json), &record_caps, out, perr, sizeof(perr)) < 0) {
		snprintf(err, errlen, "not valid JSON: %s", perr);
		return -1;
	}
	if (gpumem_acct_check(*out, cerr, sizeof(cerr)) < 0) {
		snprintf(err, errlen, "not a gpumem record: %s", cerr);
		json_object_put(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

char *gpumem_acct_decode(const char *data, size_t len, char *err, size_t errlen)
{
	struct json_object *v = NULL;
	unsigned char *z = NULL;
	char *json = NULL;

	if (len > GPUMEM_ACCT_MAX_SEGMENT) {
		snprintf(err, errlen, "segment of %zu bytes, at most %d", len,
			 GPUMEM_ACCT_MAX_SEGMENT);
		return NULL;
	}
	z = malloc(len / 2 + 1);
	if (z == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (unhex(data, len, z, err, errlen) < 0)
		goto fail;
	json = inflate_record(z, len / 2, err, errlen);
	if (json && gpumem_acct_parse(json, &v, err, errlen) < 0) {
		free(json);
		json = NULL;
	}
	json_object_put(v);
fail:
	free(z);
	return json;
}

size_t gpumem_acct_segments(const char *comment, gpumem_acct_seg_fn fn, void *arg)
{
	size_t n = 0;
	const char *p = comment;

	while (p && (p = strstr(p, GPUMEM_ACCT_OPEN)) != NULL) {
		const char *data = p + strlen(GPUMEM_ACCT_OPEN);
		const char *end = strstr(data, GPUMEM_ACCT_CLOSE);

		if (end == NULL)
			end = data + strlen(data);      /* truncated: the decoder says so */
		if (fn)
			fn(data, (size_t)(end - data), (size_t)(p - comment), arg);
		n++;
		p = *end ? end + strlen(GPUMEM_ACCT_CLOSE) : end;
	}
	return n;
}

/* The node named by a segment's record, or NULL when it cannot be read. */
static char *segment_node(const char *data, size_t len)
{
	struct json_object *v = NULL;
	char err[320], *json = gpumem_acct_decode(data, len, err, sizeof(err)), *node = NULL;
	const char *s;

	if (json && gpumem_acct_parse(json, &v, err, sizeof(err)) == 0) {
		s = gpumem_json_str(v, "node");
		node = s ? strdup(s) : NULL;
		json_object_put(v);
	}
	free(json);
	return node;
}

struct merge_walk {
	const char *node;
	size_t at, len;         /* the node's segment, delimiters included */
	int found;
};

static void find_node(const char *data, size_t len, size_t at, void *arg)
{
	struct merge_walk *w = arg;
	char *node;

	if (w->found || data[len] == '\0')      /* only a closed segment is replaced */
		return;
	node = segment_node(data, len);
	if (node && strcmp(node, w->node) == 0) {
		w->found = 1;
		w->at = at;
		w->len = len + strlen(GPUMEM_ACCT_OPEN) + strlen(GPUMEM_ACCT_CLOSE);
	}
	free(node);
}

char *gpumem_acct_merge(const char *comment, const char *node, const char *segment)
{
	struct merge_walk w = { node, 0, 0, 0 };
	size_t clen = comment ? strlen(comment) : 0;
	char *out = malloc(clen + strlen(segment) + 2);

	if (out == NULL)
		return NULL;
	if (comment)
		gpumem_acct_segments(comment, find_node, &w);
	if (w.found) {
		memcpy(out, comment, w.at);
		strcpy(out + w.at, segment);
		strcat(out, comment + w.at + w.len);
	} else if (clen) {
		/* Another tool's content first (jobstats reads from "JS1:"). */
		memcpy(out, comment, clen);
		out[clen] = ' ';
		strcpy(out + clen + 1, segment);
	} else {
		strcpy(out, segment);
	}
	return out;
}

int gpumem_acct_storable(const char *text, int lowers, char *err, size_t errlen)
{
	for (size_t i = 0; text[i]; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c == '\'' || c == '"' || c == '\\') {
			snprintf(err, errlen, "it holds %c at offset %zu, which sacctmgr or MySQL "
				 "would change", c, i);
			return -1;
		}
		if (lowers && isupper(c)) {
			snprintf(err, errlen, "it holds the upper-case '%c' at offset %zu, which this "
				 "sacctmgr (before 23.02) would lower-case", c, i);
			return -1;
		}
		if (c < 0x20 || c == 0x7f) {
			snprintf(err, errlen, "it holds the control character 0x%02x at offset %zu",
				 c, i);
			return -1;
		}
	}
	return 0;
}

int gpumem_acct_segment_record(const char *data, size_t len, struct json_object **out,
			       char *err, size_t errlen)
{
	char *json = gpumem_acct_decode(data, len, err, errlen);
	int rv = -1;

	*out = NULL;
	if (json)
		rv = gpumem_acct_parse(json, out, err, errlen);
	free(json);
	return rv;
}
