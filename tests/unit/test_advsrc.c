/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The versioned record's named fields (plugin/core/record): the advised
 * source (advsrc.c) forwarded, kept in "adv" and shown as a label that is
 * never read back from a version 2 record; the profile's named GPU row
 * (profile_row.c); and literal version 1 records, as sites' databases
 * hold them, still read: the positional row and the old label.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_record.h"
#include "tap.h"

#define EFF "\"eff\":{\"l2\":null,\"mps\":null,\"daemon\":\"none\",\"um\":\"none\"}"
/* A version 1 record as gpumem wrote it before the named rows, word for word. */
#define V1 "{\"v\":1,\"node\":\"gpu01\",\"job\":22,\"user\":\"u\",\"policy\":\"zerocopy.yaml " \
	"(advised from job 21: faulting) (as forwarded)\"," EFF ",\"checks\":[],\"drained\":false," \
	"\"prof\":{\"st\":\"ran\",\"why\":null,\"s\":30,\"src\":\"gpm\",\"g\":[[0,30,\"gpm\",5,5,20," \
	"20,10,5.4,5.4,4.0,0,0,7.5,\"MIG: 1g.18gb\"]]}}"
#define ROW2 "{\"gpu\":1,\"n\":40,\"src\":\"gpm\",\"dram\":90,\"dram95\":91,\"sm\":50,\"sm95\":55," \
	"\"occ\":30,\"rx\":0.1,\"rx95\":0.2,\"tx\":0.1,\"nvrx\":null,\"nvtx\":null,\"mem\":7.5," \
	"\"model\":\"NVIDIA H200\"}"

static struct json_object *rec_of(const char *json, char *err, size_t len)
{
	struct json_object *r = NULL;

	if (gpumem_acct_parse(json, &r, err, len) < 0)
		return NULL;
	return r;
}

static void v2(const char *policy, const char *adv, char *out, size_t len)
{
	snprintf(out, len, "{\"v\":2,\"node\":\"gpu01\",\"job\":23,\"user\":\"u\",\"policy\":\"%s\"," EFF
		 ",\"checks\":[],\"drained\":false,\"prof\":{\"st\":\"ran\",\"why\":null,\"s\":40,"
		 "\"src\":\"gpm\",\"g\":[" ROW2 "]}%s%s}", policy, adv ? ",\"adv\":" : "", adv ? adv : "");
}

int main(void)
{
	struct gpumem_advsrc s, back = { 0 };
	struct gpumem_prof_gpu g;
	struct json_object *r;
	char err[300], json[2048], label[256], *t;

	/* A literal version 1 record: its label read, its positional row read. */
	r = rec_of(V1, err, sizeof(err));
	ok(r != NULL, "a version 1 record still checks");
	is_int(gpumem_advsrc_of_record(r, &s), 1, "... its old label says it ran advised");
	ok(s.job == 21 && !strcmp(s.rule, "faulting") && !strcmp(s.policy, "zerocopy.yaml"), "... from job 21, faulting, zerocopy.yaml");
	is_int(gpumem_prof_gpu_of(gpumem_json_at(gpumem_json_get(gpumem_json_get(r, "prof"), "g"), 0), &g), 0, "... its positional row reads");
	ok(g.index == 0 && g.samples == 30 && g.dram_mean == 5 && g.rx_mean == 5.4 && g.tx_mean == 4.0 && g.mem_max == 7.5 &&
	   !strcmp(g.note, "MIG: 1g.18gb") && !g.model[0], "... every figure in its place, the note, no model");
	json_object_put(r);

	/* Version 2: the fields decide, the label is never parsed. */
	v2("stream.yaml (advised from job 7: hbm-bound)", NULL, json, sizeof(json));
	r = rec_of(json, err, sizeof(err));
	ok(r != NULL, "a version 2 record with a named row checks");
	is_int(gpumem_advsrc_of_record(r, &s), 0, "a forged label in a version 2 record: not advised");
	is_int(gpumem_prof_gpu_of(gpumem_json_at(gpumem_json_get(gpumem_json_get(r, "prof"), "g"), 0), &g), 0, "... its named row reads");
	ok(g.index == 1 && g.samples == 40 && g.dram_mean == 90 && g.dram_p95 == 91 && g.sm_p95 == 55 && g.rx_p95 == 0.2 &&
	   g.nvrx_mean != g.nvrx_mean && !strcmp(g.model, "NVIDIA H200") && !strcmp(g.source, "gpm"), "... by name, null as NAN, the model");
	json_object_put(r);
	v2("stream.yaml (advised from job 7: hbm-bound)",
	   "{\"job\":21,\"rule\":\"faulting\",\"policy\":\"zerocopy.yaml\",\"standing\":\"probation\"}", json, sizeof(json));
	r = rec_of(json, err, sizeof(err));
	ok(r != NULL && gpumem_advsrc_of_record(r, &s) == 1 && s.job == 21 && !strcmp(s.policy, "zerocopy.yaml") &&
	   !strcmp(s.standing, "probation"), "\"adv\" decides, whatever the label says");
	json_object_put(r);

	/* What the checker refuses. */
	v2("x", "{\"job\":21,\"rule\":\"faulting\",\"policy\":\"../zerocopy.yaml\",\"standing\":\"new\"}", json, sizeof(json));
	ok(rec_of(json, err, sizeof(err)) == NULL, "adv with a path for a policy: refused");
	like(err, "adv: policy: not a policy file name", "... naming the field");
	v2("x", "{\"job\":0,\"rule\":\"faulting\",\"policy\":\"z.yaml\",\"standing\":\"new\"}", json, sizeof(json));
	ok(rec_of(json, err, sizeof(err)) == NULL && strstr(err, "adv: job"), "adv with job 0: refused");
	v2("x", "{\"job\":3,\"rule\":\"faulting\",\"policy\":\"z.yaml\",\"standing\":\"gained\"}", json, sizeof(json));
	ok(rec_of(json, err, sizeof(err)) == NULL && strstr(err, "adv: standing"), "adv with an unknown standing: refused");
	v2("x", "{\"job\":3,\"rule\":\"faulting\",\"policy\":\"z.yaml\",\"standing\":\"new\",\"x\":1}", json, sizeof(json));
	ok(rec_of(json, err, sizeof(err)) == NULL, "adv with a fifth member: refused");
	t = strstr(V1, "\"prof\"");
	snprintf(json, sizeof(json), "%.*s\"adv\":{\"job\":3,\"rule\":\"faulting\",\"policy\":\"z.yaml\",\"standing\":\"new\"},%s",
		 (int)(t - V1), V1, t);
	ok(rec_of(json, err, sizeof(err)) == NULL && strstr(err, "version 1"), "adv in a version 1 record: refused");
	v2("x", NULL, json, sizeof(json));
	t = strstr(json, "\"mem\"");
	memcpy(t, "\"mex\"", 5);
	ok(rec_of(json, err, sizeof(err)) == NULL, "a named row with an unknown member: refused");
	like(err, "prof.g[0].mex: not a member of a profile row", "... naming it");
	snprintf(json, sizeof(json), "%s", V1);
	t = strstr(json, "\"v\":1");
	t[4] = '3';
	ok(rec_of(json, err, sizeof(err)) == NULL && strstr(err, "version 3"), "version 3: refused, saying so");

	/* Forwarded and back; the label made from the fields. */
	s = (struct gpumem_advsrc){ .job = 1240, .rule = "faulting", .policy = "zerocopy.yaml", .standing = "kept" };
	t = gpumem_advsrc_json(&s);
	is_str(t, "{\"job\":1240,\"rule\":\"faulting\",\"policy\":\"zerocopy.yaml\",\"standing\":\"kept\"}", "the forwarded fields");
	ok(gpumem_advsrc_parse(t, &back, err, sizeof(err)) == 0 && back.job == 1240 && !strcmp(back.standing, "kept"), "... read back");
	free(t);
	gpumem_advsrc_label(&s, label, sizeof(label));
	is_str(label, "zerocopy.yaml (advised from job 1240: faulting)", "the label, made from the fields");
	ok(gpumem_advsrc_parse("zerocopy.yaml (advised from job 1240: faulting)", &back, err, sizeof(err)) < 0, "a label is no forwarded source");
	ok(gpumem_advsrc_parse("{\"job\":1,\"rule\":\"Fault\",\"policy\":\"z\",\"standing\":\"new\"}", &back, err, sizeof(err)) < 0, "a rule in capitals: refused");
	/* A record with the fields added (gpumem-acct's epilog) checks. */
	v2("zerocopy.yaml (advised from job 1240: faulting) (as forwarded)", NULL, json, sizeof(json));
	t = gpumem_advsrc_into_record(json, &s, err, sizeof(err));
	r = t ? rec_of(t, err, sizeof(err)) : NULL;
	ok(r && gpumem_advsrc_of_record(r, &back) == 1 && back.job == 1240, "the epilog's record with \"adv\" checks and reads");
	json_object_put(r);
	free(t);
	/* Applied to a job that named no policy (advised.by_default): "unasked", forwarded and recorded. */
	s.unasked = 1;
	t = gpumem_advsrc_json(&s);
	is_str(t, "{\"job\":1240,\"rule\":\"faulting\",\"policy\":\"zerocopy.yaml\",\"standing\":\"kept\",\"unasked\":true}", "unasked: the field");
	ok(gpumem_advsrc_parse(t, &back, err, sizeof(err)) == 0 && back.unasked == 1, "... read back");
	free(t);
	gpumem_advsrc_label(&s, label, sizeof(label));
	is_str(label, "zerocopy.yaml (advised by default from job 1240: faulting)", "... its label");
	ok(gpumem_advsrc_parse("{\"job\":1,\"rule\":\"f\",\"policy\":\"z\",\"standing\":\"new\",\"unasked\":false}", &back, err, sizeof(err)) < 0, "unasked false: refused (absent says so)");
	ok(gpumem_advsrc_parse("{\"job\":1,\"rule\":\"f\",\"policy\":\"z\",\"standing\":\"new\",\"x\":true}", &back, err, sizeof(err)) < 0, "a fifth member of another name: refused");
	v2("zerocopy.yaml (advised by default from job 1240: faulting) (as forwarded)", NULL, json, sizeof(json));
	t = gpumem_advsrc_into_record(json, &s, err, sizeof(err));
	r = t ? rec_of(t, err, sizeof(err)) : NULL;
	ok(r && gpumem_advsrc_of_record(r, &back) == 1 && back.unasked == 1, "a record's unasked \"adv\" checks and reads");
	json_object_put(r);
	free(t);
	return tap_done();
}
