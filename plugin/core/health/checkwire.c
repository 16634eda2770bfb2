/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The warm check server's requests and replies, the check's and the NVML
 * health's (checkwire.h has the format).  The decoder is the server's only reader of what the plugin
 * sends: every length is checked against its cap before it is used, every
 * field against what the one-shot check would accept, and anything left
 * over is an error.  The encoder applies the same checks, so the plugin
 * never sends what the server would refuse.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkwire.h"

static const unsigned char req_magic[4] = { 'G', 'M', 'C', 'Q' };
static const unsigned char rep_magic[4] = { 'G', 'M', 'C', 'A' };
static const unsigned char hreq_magic[4] = { 'G', 'M', 'H', 'Q' };
static const unsigned char hrep_magic[4] = { 'G', 'M', 'H', 'A' };
#define FLAGS_ALL (GPUMEM_CW_L2AB | GPUMEM_CW_L2RESET | GPUMEM_CW_SITE | GPUMEM_CW_SETASIDE)

static int bad(char *why, size_t wlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t wlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, wlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* String field S (L bytes) at P: its length, then its bytes; the bytes written. */
static size_t put_field(unsigned char *p, const char *s, size_t l)
{
	put32(p, (uint32_t)l);
	memcpy(p + 4, s, l);
	return 4 + l;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int gpumem_cw_gpus_ok(const char *gpus)
{
	unsigned long long seen = 0;
	const char *p = gpus;

	if (!*p)
		return 0;
	for (;;) {
		int v = 0, n = 0;

		while (*p >= '0' && *p <= '9' && n < 3) {
			v = v * 10 + (*p++ - '0');
			n++;
		}
		if (!n || v >= 64 || (n > 1 && p[-n] == '0') || (seen >> v & 1))
			return 0;
		seen |= 1ull << v;
		if (!*p)
			return 1;
		if (*p++ != ',')
			return 0;
	}
}

int gpumem_cw_setaside_ok(const char *s)
{
	size_t n = strspn(s, "0123456789");
	unsigned long long v = 0;

	if (n == 0 || n > 10 || s[0] == '0' || (s[n] && strcmp(s + n, "%")))
		return 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned long long)(s[i] - '0');
	return s[n] ? v <= 100 : v <= 1024ull * 1024 * 1024;
}

static int node_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '-' || *s == '_'))
			return 0;
	return 1;
}

static int frac_ok(const char *s)
{
	char *end;
	double v;

	if (!*s || strspn(s, "0123456789.e-+") != strlen(s))
		return 0;
	errno = 0;
	v = strtod(s, &end);
	return !*end && !errno && v > 0 && v <= 1;
}

/* Every field of REQ within its range; 0, or -1 with WHY. */
static int req_check(const struct gpumem_cw_req *req, char *why, size_t wlen)
{
	if (req->flags & ~FLAGS_ALL)
		return bad(why, wlen, "unknown flags 0x%x", req->flags);
	if (req->timeout_s < 0 || req->timeout_s > GPUMEM_CW_TIMEOUT_MAX)
		return bad(why, wlen, "timeout %d s outside [0, %d]", req->timeout_s,
			   GPUMEM_CW_TIMEOUT_MAX);
	if (!frac_ok(req->frac))
		return bad(why, wlen, "min_fraction is not a number in (0, 1]");
	if (!gpumem_cw_gpus_ok(req->gpus))
		return bad(why, wlen, "gpus is not a list of plain GPU indices");
	if (!node_ok(req->node))
		return bad(why, wlen, "node name has characters other than [A-Za-z0-9._-]");
	if (req->site_len > GPUMEM_CW_SITE_MAX)
		return bad(why, wlen, "site text over %d bytes", GPUMEM_CW_SITE_MAX);
	if (req->site_len && memchr(req->site, '\0', req->site_len))
		return bad(why, wlen, "site text holds a NUL byte");
	if (!(req->flags & GPUMEM_CW_SITE) && req->site_len)
		return bad(why, wlen, "site text without the site flag");
	if ((req->flags & GPUMEM_CW_SETASIDE) && !(req->flags & GPUMEM_CW_L2AB))
		return bad(why, wlen, "a set-aside without the L2 A/B flag");
	if ((req->flags & GPUMEM_CW_SETASIDE) ? !gpumem_cw_setaside_ok(req->setaside) :
	    req->setaside[0] != '\0')
		return bad(why, wlen, "setaside is not N%% (1..100) or a byte count (1..1 GiB)");
	return 0;
}

int gpumem_cw_req_encode(const struct gpumem_cw_req *req, unsigned char **buf, size_t *len,
			 char *why, size_t wlen)
{
	const char *s[5] = { req->frac, req->gpus, req->node, req->site ? req->site : "",
			     req->setaside };
	size_t l[5] = { strlen(req->frac), strlen(req->gpus), strlen(req->node), req->site_len,
			strlen(req->setaside) };
	int nf = req->flags & GPUMEM_CW_SETASIDE ? 5 : 4;
	size_t body = 0, off;
	unsigned char *b;

	*buf = NULL;
	if (req_check(req, why, wlen) < 0)
		return -1;
	for (int i = 0; i < nf; i++)
		body += 4 + l[i];
	b = malloc(GPUMEM_CW_HEAD + body);
	if (!b)
		return bad(why, wlen, "out of memory");
	memcpy(b, req_magic, 4);
	b[4] = GPUMEM_CW_VERSION;
	b[5] = (unsigned char)req->flags;
	b[6] = (unsigned char)(req->timeout_s >> 8);
	b[7] = (unsigned char)req->timeout_s;
	put32(b + 8, (uint32_t)body);
	off = GPUMEM_CW_HEAD;
	for (int i = 0; i < nf; i++)
		off += put_field(b + off, s[i], l[i]);
	*buf = b;
	*len = off;
	return 0;
}

long gpumem_cw_req_head(const unsigned char *h, char *why, size_t wlen)
{
	uint32_t body;

	if (memcmp(h, req_magic, 4))
		return bad(why, wlen, "not a gpumem-check request");
	if (h[4] != GPUMEM_CW_VERSION)
		return bad(why, wlen, "request version %u, this server speaks %u", h[4],
			   GPUMEM_CW_VERSION);
	if (h[5] & ~FLAGS_ALL)
		return bad(why, wlen, "unknown flags 0x%x", h[5]);
	if ((h[6] << 8 | h[7]) > GPUMEM_CW_TIMEOUT_MAX)
		return bad(why, wlen, "timeout outside [0, %d]", GPUMEM_CW_TIMEOUT_MAX);
	body = get32(h + 8);
	if (body < 16 || body > GPUMEM_CW_BODY_MAX)
		return bad(why, wlen, "body of %u bytes outside [16, %d]", (unsigned)body,
			   GPUMEM_CW_BODY_MAX);
	return (long)body;
}

/* String field I (cap MAX) at *OFF of BUF (LEN): into OUT (MAX + 1) or malloc'd *DUP. */
static int field(const unsigned char *buf, size_t len, size_t *off, size_t max, char *out,
		 char **dup, size_t *flen, const char *name, char *why, size_t wlen)
{
	uint32_t l;
	char *d;

	if (len - *off < 4)
		return bad(why, wlen, "truncated before %s", name);
	l = get32(buf + *off);
	*off += 4;
	if (l > max)
		return bad(why, wlen, "%s of %u bytes over %zu", name, (unsigned)l, max);
	if (len - *off < l)
		return bad(why, wlen, "truncated in %s", name);
	if (memchr(buf + *off, '\0', l))
		return bad(why, wlen, "%s holds a NUL byte", name);
	d = out ? out : malloc((size_t)l + 1);
	if (!d)
		return bad(why, wlen, "out of memory");
	memcpy(d, buf + *off, l);
	d[l] = '\0';
	*off += l;
	if (dup)
		*dup = d;
	if (flen)
		*flen = l;
	return 0;
}

int gpumem_cw_req_decode(const unsigned char *buf, size_t len, struct gpumem_cw_req *req,
			 char *why, size_t wlen)
{
	size_t off = GPUMEM_CW_HEAD;
	long body;

	memset(req, 0, sizeof(*req));
	if (len < GPUMEM_CW_HEAD)
		return bad(why, wlen, "truncated header (%zu bytes)", len);
	body = gpumem_cw_req_head(buf, why, wlen);
	if (body < 0)
		return -1;
	if ((size_t)body != len - GPUMEM_CW_HEAD)
		return bad(why, wlen, "body of %zu bytes, the header says %ld",
			   len - GPUMEM_CW_HEAD, body);
	req->flags = buf[5];
	req->timeout_s = buf[6] << 8 | buf[7];
	if (field(buf, len, &off, GPUMEM_CW_FRAC_MAX, req->frac, NULL, NULL, "min_fraction", why, wlen) < 0 ||
	    field(buf, len, &off, GPUMEM_CW_GPUS_MAX, req->gpus, NULL, NULL, "gpus", why, wlen) < 0 ||
	    field(buf, len, &off, GPUMEM_CW_NODE_MAX, req->node, NULL, NULL, "node", why, wlen) < 0 ||
	    field(buf, len, &off, GPUMEM_CW_SITE_MAX, NULL, &req->site, &req->site_len, "site", why, wlen) < 0 ||
	    ((req->flags & GPUMEM_CW_SETASIDE) &&
	     field(buf, len, &off, GPUMEM_CW_SETASIDE_MAX, req->setaside, NULL, NULL, "setaside", why,
		   wlen) < 0))
		goto fail;
	if (off != len) {
		bad(why, wlen, "%zu bytes after the last field", len - off);
		goto fail;
	}
	if (req_check(req, why, wlen) < 0)
		goto fail;
	return 0;
fail:
	gpumem_cw_req_free(req);
	return -1;
}

void gpumem_cw_req_free(struct gpumem_cw_req *req)
{
	free(req->site);
	req->site = NULL;
	req->site_len = 0;
}

void gpumem_cw_hello(unsigned char *h)
{
	memcpy(h, "GMCH", 4);
	h[4] = GPUMEM_CW_VERSION;
	h[5] = h[6] = h[7] = 0;
}

int gpumem_cw_hello_ok(const unsigned char *h)
{
	unsigned char want[GPUMEM_CW_HELLO];

	gpumem_cw_hello(want);
	return !memcmp(h, want, sizeof(want));
}

/* A header of MAGIC: version, CODE, 0, LEN. */
static void head_put(unsigned char *h, const unsigned char *magic, int code, size_t len)
{
	memcpy(h, magic, 4);
	h[4] = GPUMEM_CW_VERSION;
	h[5] = (unsigned char)code;
	h[6] = h[7] = 0;
	put32(h + 8, (uint32_t)len);
}

/* A reply header of MAGIC (WHAT's) with a document of at most MAX bytes; its length, or -1. */
static long reply_get(const unsigned char *h, const unsigned char *magic, size_t max,
		      const char *what, char *why, size_t wlen)
{
	uint32_t l;

	if (memcmp(h, magic, 4) || h[4] != GPUMEM_CW_VERSION || h[6] || h[7])
		return bad(why, wlen, "not a version %u %s reply", GPUMEM_CW_VERSION, what);
	l = get32(h + 8);
	if (l > max)
		return bad(why, wlen, "document of %u bytes over %zu", (unsigned)l, max);
	return (long)l;
}

void gpumem_cw_reply_head(unsigned char *h, int code, size_t doc_len)
{
	head_put(h, rep_magic, code, doc_len);
}

int gpumem_cw_reply_parse(const unsigned char *h, int *code, size_t *doc_len, char *why,
			  size_t wlen)
{
	long l = reply_get(h, rep_magic, GPUMEM_CW_DOC_MAX, "gpumem-check", why, wlen);

	if (l < 0)
		return -1;
	if (h[5] > 4 && h[5] != 64)
		return bad(why, wlen, "exit code %u is not a check's", h[5]);
	*code = h[5];
	*doc_len = (size_t)l;
	return 0;
}

int gpumem_cw_kind(const unsigned char *h)
{
	if (!memcmp(h, req_magic, 4))
		return GPUMEM_CW_KIND_CHECK;
	if (!memcmp(h, hreq_magic, 4))
		return GPUMEM_CW_KIND_HEALTH;
	return 0;
}

int gpumem_cw_health_encode(const char *gpus, unsigned char **buf, size_t *len, char *why,
			    size_t wlen)
{
	size_t l = strlen(gpus);
	unsigned char *b;

	*buf = NULL;
	if (l > GPUMEM_CW_GPUS_MAX || !gpumem_cw_gpus_ok(gpus))
		return bad(why, wlen, "gpus is not a list of plain GPU indices");
	b = malloc(GPUMEM_CW_HEAD + 4 + l);
	if (!b)
		return bad(why, wlen, "out of memory");
	head_put(b, hreq_magic, 0, 4 + l);
	*buf = b;
	*len = GPUMEM_CW_HEAD + put_field(b + GPUMEM_CW_HEAD, gpus, l);
	return 0;
}

long gpumem_cw_health_head(const unsigned char *h, char *why, size_t wlen)
{
	uint32_t body;

	if (memcmp(h, hreq_magic, 4))
		return bad(why, wlen, "not a health request");
	if (h[4] != GPUMEM_CW_VERSION)
		return bad(why, wlen, "health request version %u, this server speaks %u", h[4],
			   GPUMEM_CW_VERSION);
	if (h[5] || h[6] || h[7])
		return bad(why, wlen, "health request with flags or a timeout");
	body = get32(h + 8);
	if (body < 4 || body > GPUMEM_CW_HEALTH_BODY_MAX)
		return bad(why, wlen, "body of %u bytes outside [4, %d]", (unsigned)body,
			   GPUMEM_CW_HEALTH_BODY_MAX);
	return (long)body;
}

int gpumem_cw_health_decode(const unsigned char *buf, size_t len, char *gpus, char *why,
			    size_t wlen)
{
	size_t off = GPUMEM_CW_HEAD;
	long body;

	gpus[0] = '\0';
	if (len < GPUMEM_CW_HEAD)
		return bad(why, wlen, "truncated header (%zu bytes)", len);
	body = gpumem_cw_health_head(buf, why, wlen);
	if (body < 0)
		return -1;
	if ((size_t)body != len - GPUMEM_CW_HEAD)
		return bad(why, wlen, "body of %zu bytes, the header says %ld",
			   len - GPUMEM_CW_HEAD, body);
	if (field(buf, len, &off, GPUMEM_CW_GPUS_MAX, gpus, NULL, NULL, "gpus", why, wlen) < 0)
		goto fail;
	if (off != len) {
		bad(why, wlen, "%zu bytes after the last field", len - off);
		goto fail;
	}
	if (!gpumem_cw_gpus_ok(gpus)) {
		bad(why, wlen, "gpus is not a list of plain GPU indices");
		goto fail;
	}
	return 0;
fail:
	gpus[0] = '\0';
	return -1;
}

void gpumem_cw_health_reply_head(unsigned char *h, int code, size_t doc_len)
{
	head_put(h, hrep_magic, code, doc_len);
}

int gpumem_cw_health_reply_parse(const unsigned char *h, int *code, size_t *doc_len,
				 char *why, size_t wlen)
{
	long l = reply_get(h, hrep_magic, GPUMEM_CW_HEALTH_DOC_MAX, "health", why, wlen);

	if (l < 0)
		return -1;
	if (h[5] > 3)
		return bad(why, wlen, "exit code %u is not gpumem-health's", h[5]);
	*code = h[5];
	*doc_len = (size_t)l;
	return 0;
}
