/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The warm check server's request and reply codec (plugin/core/health/checkwire.c):
 * a request round-trips; every bad length, truncation, oversize, version,
 * flag and field is refused with a reason, and nothing is kept then.  The
 * NVML health request and reply likewise, and neither kind passes for the
 * other (an older server refuses a health request: the plugin falls back).
 * The job's L2 set-aside rides in a fifth field only under its flag, so a
 * request without one is the bytes it always was.
 */
#include <stdlib.h>
#include <string.h>
#include "core_health.h"
#include "tap.h"

static void put32(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static struct gpumem_cw_req base(void)
{
	struct gpumem_cw_req q = { 0 };

	q.flags = GPUMEM_CW_SITE | GPUMEM_CW_L2RESET;
	q.timeout_s = 60;
	strcpy(q.frac, "0.85");
	strcpy(q.gpus, "1,3");
	strcpy(q.node, "gpu01");
	q.site = "version: 1\n";
	q.site_len = strlen(q.site);
	return q;
}

/* The NVML health request and reply. */
static void health(void)
{
	unsigned char *b = NULL, head[GPUMEM_CW_HEAD];
	char gpus[GPUMEM_CW_GPUS_MAX + 1], why[200], big[GPUMEM_CW_GPUS_MAX + 8];
	size_t len = 0, dl;
	int code;

	is_int(gpumem_cw_health_encode("0,2,3", &b, &len, why, sizeof(why)), 0, "health: encode");
	is_int((int)len, GPUMEM_CW_HEAD + 4 + 5, "health: header, one length, the list");
	ok(!memcmp(b, "GMHQ\1\0\0\0", 8), "health: magic GMHQ, version 1, no flags");
	is_int(gpumem_cw_kind(b), GPUMEM_CW_KIND_HEALTH, "health: its kind");
	is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), 0, "health: decode");
	is_str(gpus, "0,2,3", "health: the GPUs round-trip");
	/* An older server reads it as a check request that does not decode. */
	is_int((int)gpumem_cw_req_head(b, why, sizeof(why)), -1, "health: not a check request");
	is_str(why, "not a gpumem-check request", "... saying so");
	is_int(gpumem_cw_health_decode(b, len - 1, gpus, why, sizeof(why)), -1, "health: truncated refused");
	is_str(gpus, "", "... nothing kept");
	b[4] = 2;
	is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), -1, "health: version 2 refused");
	b[4] = 1;
	b[5] = 1;
	is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), -1, "health: flags refused");
	b[5] = 0;
	b[GPUMEM_CW_HEAD + 4] = 'x';
	is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), -1, "health: a list that is no indices refused");
	b[GPUMEM_CW_HEAD + 4] = '0';
	put32(b + GPUMEM_CW_HEAD, 4);
	is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), -1, "health: bytes after the field refused");
	put32(b + 8, GPUMEM_CW_HEALTH_BODY_MAX + 1);
	is_int((int)gpumem_cw_health_head(b, why, sizeof(why)), -1, "health: an oversized body refused");
	free(b);
	is_int(gpumem_cw_health_encode("0,0", &b, &len, why, sizeof(why)), -1, "health: a repeated GPU not encoded");
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	is_int(gpumem_cw_health_encode(big, &b, &len, why, sizeof(why)), -1, "health: an oversized list not encoded");
	/* A check request is not a health request. */
	{
		struct gpumem_cw_req q = base();

		gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why));
		is_int(gpumem_cw_kind(b), GPUMEM_CW_KIND_CHECK, "a check request's kind");
		is_int(gpumem_cw_health_decode(b, len, gpus, why, sizeof(why)), -1, "a check request is no health request");
		free(b);
	}
	is_int(gpumem_cw_kind((const unsigned char *)"GMCHxxxxxxxx"), 0, "a hello is no request");

	gpumem_cw_health_reply_head(head, 3, 999);
	is_int(gpumem_cw_health_reply_parse(head, &code, &dl, why, sizeof(why)), 0, "health reply head");
	is_int(code, 3, "its exit code (no NVML)");
	is_int((int)dl, 999, "its length");
	is_int(gpumem_cw_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "a health reply is no check reply");
	gpumem_cw_reply_head(head, 0, 10);
	is_int(gpumem_cw_health_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "a check reply is no health reply");
	gpumem_cw_health_reply_head(head, 4, 10);
	is_int(gpumem_cw_health_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "health exit code 4 refused");
	gpumem_cw_health_reply_head(head, 0, GPUMEM_CW_HEALTH_DOC_MAX + 1);
	is_int(gpumem_cw_health_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "oversized health document refused");
}

/* The set-aside field: round trip, its syntax, its flag's rules. */
static void setaside(void)
{
	struct gpumem_cw_req q = base(), r;
	unsigned char *b = NULL, *plain = NULL;
	size_t len = 0, plen = 0;
	char why[200];

	gpumem_cw_req_encode(&q, &plain, &plen, why, sizeof(why));
	q.flags |= GPUMEM_CW_L2AB | GPUMEM_CW_SETASIDE;
	strcpy(q.setaside, "40%");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), 0, "setaside: encode");
	is_int((int)(len - plen), 4 + 3, "setaside: one field more, only with its flag");
	is_int(gpumem_cw_req_decode(b, len, &r, why, sizeof(why)), 0, "setaside: decode");
	is_str(r.setaside, "40%", "setaside: round-trips");
	is_int((int)r.flags, (int)q.flags, "setaside: its flag round-trips");
	gpumem_cw_req_free(&r);
	b[5] &= (unsigned char)~GPUMEM_CW_SETASIDE;
	is_int(gpumem_cw_req_decode(b, len, &r, why, sizeof(why)), -1, "setaside: the field without its flag refused");
	b[5] = (unsigned char)(q.flags & ~GPUMEM_CW_L2AB);
	is_int(gpumem_cw_req_decode(b, len, &r, why, sizeof(why)), -1, "setaside: without the L2 A/B refused");
	like(why, "L2 A/B", "... said");
	b[5] = (unsigned char)q.flags;
	b[len - 1] = 'x';
	is_int(gpumem_cw_req_decode(b, len, &r, why, sizeof(why)), -1, "setaside: '40x' refused");
	like(why, "setaside is not", "... said");
	free(b);
	is_int(gpumem_cw_req_decode(plain, plen, &r, why, sizeof(why)), 0, "a request without it decodes as before");
	is_str(r.setaside, "", "... with no set-aside");
	gpumem_cw_req_free(&r);
	free(plain);
	strcpy(q.setaside, "");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "setaside: its flag with no value not encoded");
	q.flags &= ~GPUMEM_CW_SETASIDE;
	strcpy(q.setaside, "40%");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "setaside: a value without its flag not encoded");
	ok(gpumem_cw_setaside_ok("1%") && gpumem_cw_setaside_ok("100%") &&
	   gpumem_cw_setaside_ok("1073741824") && gpumem_cw_setaside_ok("41943040"),
	   "1%%, 100%%, 1 GiB and 40 MiB in bytes are set-asides");
	ok(!gpumem_cw_setaside_ok("0%") && !gpumem_cw_setaside_ok("101%") &&
	   !gpumem_cw_setaside_ok("050%") && !gpumem_cw_setaside_ok("1073741825") &&
	   !gpumem_cw_setaside_ok("") && !gpumem_cw_setaside_ok("%") &&
	   !gpumem_cw_setaside_ok("40MiB") && !gpumem_cw_setaside_ok("40%%") &&
	   !gpumem_cw_setaside_ok("-1"), "0%%, 101%%, 050%%, 1 GiB + 1, '', %%, 40MiB, 40%%%%, -1 are not");
}

/* Decode BUF of LEN; 0 or -1, WHY said. */
static int dec(const unsigned char *buf, size_t len, char *why)
{
	struct gpumem_cw_req r;
	int rv = gpumem_cw_req_decode(buf, len, &r, why, 200);

	if (rv == 0)
		gpumem_cw_req_free(&r);
	else
		ok(r.site == NULL, "refused: nothing kept (%s)", why);
	return rv;
}

int main(void)
{
	struct gpumem_cw_req q = base(), r;
	unsigned char *b, *c, head[GPUMEM_CW_HEAD];
	char why[200];
	size_t len, dl;
	int code;

	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), 0, "encode");
	is_int(gpumem_cw_req_decode(b, len, &r, why, sizeof(why)), 0, "decode");
	is_int((int)r.flags, (int)q.flags, "flags round-trip");
	is_int(r.timeout_s, 60, "timeout round-trips");
	is_str(r.frac, "0.85", "min_fraction round-trips");
	is_str(r.gpus, "1,3", "gpus round-trip");
	is_str(r.node, "gpu01", "node round-trips");
	is_str(r.site, "version: 1\n", "site round-trips");
	gpumem_cw_req_free(&r);
	is_int((int)gpumem_cw_req_head(b, why, sizeof(why)), (int)(len - GPUMEM_CW_HEAD),
	       "the header announces the body");

	/* truncated anywhere */
	for (size_t cut = 0; cut < len; cut += (cut < 40 ? 1 : 7))
		if (dec(b, cut, why) == 0)
			ok(0, "a request cut at %zu bytes decoded", cut);
	ok(1, "every truncation refused");
	c = malloc(len + 1);
	memcpy(c, b, len);
	c[len] = 'x';
	is_int(dec(c, len + 1, why), -1, "a byte past the body");
	like(why, "header says", "... is said");
	memcpy(c, b, len);
	c[4] = 2;
	is_int(dec(c, len, why), -1, "version 2 refused");
	like(why, "version 2", "... saying the version");
	memcpy(c, b, len);
	c[0] = 'X';
	is_int(dec(c, len, why), -1, "bad magic refused");
	memcpy(c, b, len);
	c[5] = 0x80;
	is_int(dec(c, len, why), -1, "unknown flag refused");
	memcpy(c, b, len);
	c[6] = 0xff;
	is_int(dec(c, len, why), -1, "timeout over an hour refused");
	memcpy(c, b, len);
	put32(c + 8, GPUMEM_CW_BODY_MAX + 1);
	is_int((int)gpumem_cw_req_head(c, why, sizeof(why)), -1, "oversized body refused at the header");
	like(why, "outside", "... saying so");
	memcpy(c, b, len);
	put32(c + GPUMEM_CW_HEAD, 0x7fffffff);
	is_int(dec(c, len, why), -1, "a field length past its cap");
	like(why, "min_fraction of", "... naming the field");
	memcpy(c, b, len);
	put32(c + GPUMEM_CW_HEAD, 5);   /* "0.85" is 4: the fields shift */
	is_int(dec(c, len, why), -1, "a field length past the body's end");
	memcpy(c, b, len);
	c[GPUMEM_CW_HEAD + 4 + 4 + 4] = ';';      /* gpus "1,3" -> "1;3" */
	is_int(dec(c, len, why), -1, "gpus other than plain indices");
	like(why, "plain GPU indices", "... said");
	memcpy(c, b, len);
	c[len - 2] = '\0';
	is_int(dec(c, len, why), -1, "a NUL byte in the site text");
	free(c);
	free(b);

	/* the encoder refuses what the decoder would */
	q = base();
	strcpy(q.gpus, "MIG-1234");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "MIG UUIDs are not sent");
	q = base();
	strcpy(q.gpus, "0,0");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "repeated index");
	q = base();
	strcpy(q.gpus, "64");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "index 64");
	q = base();
	strcpy(q.gpus, "");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "no GPUs (gpus=all)");
	q = base();
	strcpy(q.frac, "1.5");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "min_fraction 1.5");
	q = base();
	strcpy(q.node, "a b");
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "a node name with a blank");
	q = base();
	q.flags = 0;
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "site text without its flag");
	q = base();
	q.site_len = GPUMEM_CW_SITE_MAX + 1;
	q.site = calloc(1, q.site_len + 1);
	memset((char *)q.site, 'a', q.site_len);
	is_int(gpumem_cw_req_encode(&q, &b, &len, why, sizeof(why)), -1, "site text over 64 KiB");
	free((char *)q.site);
	ok(gpumem_cw_gpus_ok("0,2,10,63"), "0,2,10,63 are plain indices");
	ok(!gpumem_cw_gpus_ok("01"), "01 is not");
	ok(!gpumem_cw_gpus_ok("0,"), "0, is not");
	ok(!gpumem_cw_gpus_ok(" 0"), "' 0' is not");

	/* hello */
	gpumem_cw_hello(head);
	ok(gpumem_cw_hello_ok(head), "hello");
	head[4] = 2;
	ok(!gpumem_cw_hello_ok(head), "a version 2 hello is not one");

	/* replies */
	gpumem_cw_reply_head(head, 3, 1234);
	is_int(gpumem_cw_reply_parse(head, &code, &dl, why, sizeof(why)), 0, "reply head");
	is_int(code, 3, "its exit code");
	is_int((int)dl, 1234, "its length");
	gpumem_cw_reply_head(head, 9, 10);
	is_int(gpumem_cw_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "exit code 9 refused");
	gpumem_cw_reply_head(head, 0, GPUMEM_CW_DOC_MAX + 1);
	is_int(gpumem_cw_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "oversized document refused");
	gpumem_cw_reply_head(head, 0, 10);
	head[4] = 2;
	is_int(gpumem_cw_reply_parse(head, &code, &dl, why, sizeof(why)), -1, "reply version 2 refused");
	health();
	setaside();
	return tap_done();
}
