/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The warm check server's wire format (checkwire.c): what the job prolog
 * or epilog (root, plugin/spank/check/checkserve.c) asks a running
 * `gpumem-check --serve` (check_user, kernels/check/check_serve.c) on the
 * node's root-only socket, and what it answers.  One request and one reply
 * per connection.  Both are length-prefixed, versioned and bounded; a
 * request is decoded in full and every field checked before anything runs
 * (doc/HARDENING.md: the server takes no job input but this).
 *
 * Hello:    "GMCH" u8 version (1), 3 zero bytes: the server's first words
 *           on each accepted connection, before it reads the request (the
 *           caller learns, by the kernel's SCM_CREDENTIALS on them, who
 *           serves it, before it says anything).
 * Request:  "GMCQ" u8 version (1) u8 flags u16 timeout_s, u32 body length,
 *           then the body: four strings, each u32 length + bytes (no NUL):
 *           min_fraction ("%g"), gpus ("0,1,3": plain indices, as the
 *           plugin would set CUDA_VISIBLE_DEVICES), node
 *           (SLURMD_NODENAME), site (the site file's text; empty: none);
 *           with flag 8 a fifth, setaside: the job's persisting-L2
 *           set-aside, "N%" (1..100) or a byte count (decimal, 1..1 GiB),
 *           as gpumem-check --l2-setaside takes it (needs flag 1).
 * Reply:    "GMCA" u8 version (1) u8 exit code u16 0, u32 document length,
 *           then the document (the bytes `gpumem-check --json -` prints).
 * Health request (the job's NVML health, doc/admin/checks.md "Reuse"):
 *           "GMHQ" u8 version (1) u8 0 u16 0, u32 body length, then the
 *           body: one string, gpus ("0,1,3", as `gpumem-health --gpus`).
 * Health reply: "GMHA" u8 version (1) u8 exit code (gpumem-health's: 0,
 *           1, 3) u16 0, u32 document length, then the document (the
 *           gpumem-health/1 bytes gpumem-health prints).
 * A server older than the health request reads "GMHQ" as a request that
 * does not decode and answers nothing: the plugin then runs gpumem-health.
 * Integers are big-endian.
 */
#ifndef GPUMEM_CHECKWIRE_H
#define GPUMEM_CHECKWIRE_H
#include <stddef.h>
#include <stdint.h>

#define GPUMEM_CW_VERSION 1
#define GPUMEM_CW_HEAD 12                       /* magic, version, flags/code, u16, u32 */
#define GPUMEM_CW_FRAC_MAX 31
#define GPUMEM_CW_GPUS_MAX 1023
#define GPUMEM_CW_NODE_MAX 63
#define GPUMEM_CW_SETASIDE_MAX 15
#define GPUMEM_CW_SITE_MAX (64 * 1024)          /* GPUMEM_MAX_FILE_BYTES */
#define GPUMEM_CW_BODY_MAX (20 + GPUMEM_CW_FRAC_MAX + GPUMEM_CW_GPUS_MAX + \
			    GPUMEM_CW_NODE_MAX + GPUMEM_CW_SITE_MAX + GPUMEM_CW_SETASIDE_MAX)
#define GPUMEM_CW_DOC_MAX (1024 * 1024)         /* GPUMEM_REPORT_MAX_FILE_BYTES */
#define GPUMEM_CW_TIMEOUT_MAX 3600              /* the site's check.timeout range */
#define GPUMEM_CW_HEALTH_BODY_MAX (4 + GPUMEM_CW_GPUS_MAX)
#define GPUMEM_CW_HEALTH_DOC_MAX (256 * 1024)   /* a gpumem-health/1 document (evidence.c's cap too) */

#define GPUMEM_CW_L2AB 1u
#define GPUMEM_CW_L2RESET 2u
#define GPUMEM_CW_SITE 4u                       /* pass --site - with the text */
#define GPUMEM_CW_SETASIDE 8u                   /* pass --l2-setaside with the field */

struct gpumem_cw_req {
	unsigned flags;
	int timeout_s;
	char frac[GPUMEM_CW_FRAC_MAX + 1];
	char gpus[GPUMEM_CW_GPUS_MAX + 1];
	char node[GPUMEM_CW_NODE_MAX + 1];
	char setaside[GPUMEM_CW_SETASIDE_MAX + 1];     /* with GPUMEM_CW_SETASIDE */
	char *site;                             /* malloc'd (decode), NUL-terminated */
	size_t site_len;
};

/*
 * Encode REQ (its site: SITE_LEN bytes at SITE, used with GPUMEM_CW_SITE)
 * into a malloc'd *BUF of *LEN bytes.  0, or -1 with WHY (a field out of
 * range: the same checks as the decoder's).
 */
int gpumem_cw_req_encode(const struct gpumem_cw_req *req, unsigned char **buf, size_t *len,
			 char *why, size_t wlen);
/*
 * The body length a request header HEAD (GPUMEM_CW_HEAD bytes) announces,
 * or -1 with WHY (bad magic, version, flags, timeout or length).
 */
long gpumem_cw_req_head(const unsigned char *head, char *why, size_t wlen);
/*
 * Decode a whole request (header and body, LEN bytes) into REQ (its site
 * malloc'd: gpumem_cw_req_free).  0, or -1 with WHY; nothing is kept then.
 */
int gpumem_cw_req_decode(const unsigned char *buf, size_t len, struct gpumem_cw_req *req,
			 char *why, size_t wlen);
void gpumem_cw_req_free(struct gpumem_cw_req *req);
/* Is GPUS a list of plain indices ("0", "0,2,3"; no blanks, no repeats, < 64 each)? */
int gpumem_cw_gpus_ok(const char *gpus);
/* Is S a set-aside the wire carries ("50%": 1..100; "41943040": 1..1 GiB; no leading 0)? */
int gpumem_cw_setaside_ok(const char *s);
#define GPUMEM_CW_HELLO 8
/* The hello into H (GPUMEM_CW_HELLO bytes); is H one? */
void gpumem_cw_hello(unsigned char *h);
int gpumem_cw_hello_ok(const unsigned char *h);
/* The reply header for exit code CODE and a document of DOC_LEN bytes into HEAD. */
void gpumem_cw_reply_head(unsigned char *head, int code, size_t doc_len);
/* The exit code and document length a reply header gives; -1 with WHY. */
int gpumem_cw_reply_parse(const unsigned char *head, int *code, size_t *doc_len,
			  char *why, size_t wlen);

/* Which request a header HEAD starts: */
#define GPUMEM_CW_KIND_CHECK 1                  /* "GMCQ" */
#define GPUMEM_CW_KIND_HEALTH 2                 /* "GMHQ" */
int gpumem_cw_kind(const unsigned char *head);  /* one of them, or 0 */
/* The health request for GPUS into a malloc'd *BUF of *LEN bytes; 0, or -1 with WHY. */
int gpumem_cw_health_encode(const char *gpus, unsigned char **buf, size_t *len, char *why,
			    size_t wlen);
/* The body length a health request header announces, or -1 with WHY. */
long gpumem_cw_health_head(const unsigned char *head, char *why, size_t wlen);
/* Decode a whole health request (LEN bytes) into GPUS (GPUMEM_CW_GPUS_MAX + 1); 0, or -1 with WHY. */
int gpumem_cw_health_decode(const unsigned char *buf, size_t len, char *gpus, char *why,
			    size_t wlen);
/* The health reply header for exit code CODE and a document of DOC_LEN bytes into HEAD. */
void gpumem_cw_health_reply_head(unsigned char *head, int code, size_t doc_len);
/* The exit code and document length a health reply header gives; -1 with WHY. */
int gpumem_cw_health_reply_parse(const unsigned char *head, int *code, size_t *doc_len,
				 char *why, size_t wlen);
#endif
