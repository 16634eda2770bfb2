/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The accounting record's transport (plugin/core/record/acct_codec.c): encode and
 * decode, the merge that keeps every byte of other content, what sacctmgr
 * would store unchanged, and clear refusals of garbled segments.
 */
#include <stdlib.h>
#include <string.h>
#include "core_record.h"
#include "tap.h"

static const char rec1[] = "{\"v\":1,\"node\":\"gpu01\",\"job\":7,\"user\":\"bob\",\"policy\":null,"
	"\"eff\":null,\"checks\":[{\"phase\":\"after\",\"step\":\"0\",\"status\":\"ran\","
	"\"verdict\":\"pass\",\"reason\":null,\"gpus\":[[0,\"pass\",4300,4100,55,null]]}],"
	"\"drained\":false}";

static char *with_node(const char *node)
{
	char *s = malloc(sizeof(rec1) + 64), *p;

	strcpy(s, rec1);
	p = strstr(s, "gpu01");
	memmove(p + strlen(node), p + 5, strlen(p + 5) + 1);
	memcpy(p, node, strlen(node));
	return s;
}

static char *dec(const char *seg, char *err, size_t len)
{
	size_t n = strlen(seg);

	return gpumem_acct_decode(seg + 2, n - 4, err, len);
}

int main(void)
{
	char err[320], *seg, *seg2, *json, *m, *m2, *r2 = with_node("gpu02");

	seg = gpumem_acct_encode(rec1, err, sizeof(err));
	ok(seg && !strncmp(seg, "{~", 2) && strlen(seg) > 4, "encode: a {~...~} segment");
	ok(seg && strcspn(seg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/='\"\\ ") ==
	   strlen(seg), "no letter, digit, base64 sign, quote, backslash or space");
	json = seg ? dec(seg, err, sizeof(err)) : NULL;
	is_str(json, rec1, "decode gives the record back");
	free(json);

	m = gpumem_acct_merge("JS1:H4sIAAAA==", "gpu01", seg);
	ok(m && !strncmp(m, "JS1:H4sIAAAA== {~", 17), "merge: other content first, kept, then the record");
	seg2 = gpumem_acct_encode(r2, err, sizeof(err));
	m2 = gpumem_acct_merge(m, "gpu02", seg2);
	is_int(gpumem_acct_segments(m2, NULL, NULL), 2, "a second node's record is added");
	free(m);
	m = gpumem_acct_merge(m2, "gpu01", seg);
	is_str(m, m2, "the same node's record is replaced in place, nothing else moves");
	free(m);
	m = gpumem_acct_merge("", "gpu01", seg);
	is_str(m, seg, "empty comment: the record alone");
	free(m);
	free(m2);

	is_int(gpumem_acct_storable("js1:abc {~!#~}", 1, err, sizeof(err)), 0, "lower case: storable");
	is_int(gpumem_acct_storable("JS1:abc", 1, err, sizeof(err)), -1, "upper case refused where sacctmgr lower-cases");
	like(err, "upper-case 'J'", "and says so");
	is_int(gpumem_acct_storable("JS1:abc", 0, err, sizeof(err)), 0, "upper case fine on 23.02+");
	is_int(gpumem_acct_storable("a'b", 0, err, sizeof(err)), -1, "a quote is refused");
	is_int(gpumem_acct_storable("a\\b", 0, err, sizeof(err)), -1, "a backslash is refused");

	ok(gpumem_acct_decode("!!!", 3, err, sizeof(err)) == NULL, "odd length refused");
	like(err, "odd length 3", "  with the length");
	ok(gpumem_acct_decode("!z", 2, err, sizeof(err)) == NULL, "foreign character refused");
	like(err, "character 'z' (0x7a) at offset 1", "  naming it and where");
	ok(gpumem_acct_decode("!#$%", 4, err, sizeof(err)) == NULL, "not deflate refused");
	like(err, "not a compressed record", "  saying so");
	json = seg ? strdup(seg) : NULL;
	ok(json && gpumem_acct_decode(json + 2, strlen(json) - 8, err, sizeof(err)) == NULL,
	   "a truncated record refused");
	free(json);
	m = gpumem_acct_encode("{\"v\":3}", err, sizeof(err));
	ok(m && dec(m, err, sizeof(err)) == NULL, "another version refused");
	like(err, "version 3, this gpumem reads 1 to 2", "  naming both versions");
	free(m);
	m = gpumem_acct_encode("{\"v\":1,\"node\":\"x\",\"job\":1,\"drained\":false,\"checks\":[{}]}", err,
			       sizeof(err));
	ok(m && dec(m, err, sizeof(err)) == NULL, "a record with a bad check refused");
	like(err, "checks[0]: wrong fields", "  naming the field");
	free(m);
	free(seg);
	free(seg2);
	free(r2);
	return tap_done();
}
