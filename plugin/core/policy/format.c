/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writing a policy back out, as YAML for people (gpumem show) or JSON for
 * programs and for forwarding a user's policy to the nodes.  The JSON is
 * built with the JSON module (json.h) and read back on the node by
 * gpumem_policy_parse_json; it is also YAML, so `gpumem validate` takes it.
 * Which keys, in which order, and how each value is spelled come from the
 * policy's key table (policy.c): a key added there is written here too.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core_base.h"
#include "schema.h"

struct emitter {
	FILE *f;                        /* YAML */
	struct json_object *root, *sec; /* JSON: the document, the mapping being written */
	const char *indent;             /* YAML: of the mapping being written */
	int only_set;
	unsigned set;
	int nkey;                       /* keys written in this section */
};

/* One key: TEXT for YAML, JV (taken, may be NULL: null) for JSON. */
static void key(struct emitter *e, unsigned bit, const char *k, const char *text,
		struct json_object *jv)
{
	if (e->only_set && !(e->set & bit)) {
		json_object_put(jv);
		return;
	}
	if (e->root) {
		gpumem_json_add(e->sec, k, jv);
	} else {
		fprintf(e->f, "%s%s: %s\n", e->indent, k, text);
		json_object_put(jv);
	}
	e->nkey++;
}

/* A list of names, one per bit of V ("[cpu, gpu]"; JSON: an array). */
static void list_key(struct emitter *e, const struct gpumem_key *k, unsigned v)
{
	struct json_object *list = e->root ? json_object_new_array() : NULL;
	char text[256] = "[";

	for (unsigned i = 0; k->names[i]; i++) {
		if (!(v & (1u << i)))
			continue;
		if (text[1])
			strncat(text, ", ", sizeof(text) - strlen(text) - 1);
		strncat(text, k->names[i], sizeof(text) - strlen(text) - 1);
		if (list)
			json_object_array_add(list, gpumem_json_string(k->names[i]));
	}
	strncat(text, "]", sizeof(text) - strlen(text) - 1);
	key(e, k->bit, k->name, text, list);
}

/* A number as gpumem_format_double spells it: it reads back the same. */
static void double_key(struct emitter *e, const struct gpumem_key *k, double v)
{
	char text[64];

	gpumem_format_double(v, text, sizeof(text));
	key(e, k->bit, k->name, text, json_object_new_double_s(v, text));
}

/* l2.persisting_limit: a percent or a size, from three fields. */
static void l2limit_key(struct emitter *e, const struct gpumem_key *k, const struct gpumem_policy *p)
{
	char v[64];

	if (p->l2.limit_is_percent) {
		gpumem_format_double(p->l2.limit_percent, v, sizeof(v) - 1);
		strcat(v, "%");
	} else {
		gpumem_format_size(p->l2.limit_bytes, v, sizeof(v));
	}
	key(e, k->bit, k->name, v, gpumem_json_string(v));
}

static void keys(struct emitter *e, const struct gpumem_key *ks, const struct gpumem_policy *p);

/* A mapping inside a section (check.bandwidth), written when any key of it is. */
static void sub_section(struct emitter *e, const struct gpumem_key *k, const struct gpumem_policy *p)
{
	struct json_object *outer = e->sec;
	const char *indent = e->indent;
	unsigned bits = 0;

	for (const struct gpumem_key *s = k->sub; s->name; s++)
		bits |= s->bit;
	if (e->only_set && !(e->set & bits))
		return;
	if (e->root)
		e->sec = json_object_new_object();
	else
		fprintf(e->f, "%s%s:\n", indent, k->name);
	e->indent = "    ";
	keys(e, k->sub, p);
	if (e->root)
		gpumem_json_add(outer, k->name, e->sec);
	e->sec = outer;
	e->indent = indent;
}

/* One key by its type; not set and with a note of its own: null, and the note. */
static void value_key(struct emitter *e, const struct gpumem_key *k, const struct gpumem_policy *p)
{
	const char *at = (const char *)p + k->off;
	char v[64];

	if (k->unset && !(p->set & k->bit)) {
		snprintf(v, sizeof(v), "null  # not set: %s", k->unset);
		key(e, k->bit, k->name, v, NULL);
		return;
	}
	switch (k->type) {
	case GPUMEM_KT_BOOL:
		key(e, k->bit, k->name, *(const int *)at ? "true" : "false",
		    gpumem_json_bool(*(const int *)at));
		break;
	case GPUMEM_KT_INT:
		snprintf(v, sizeof(v), "%d", *(const int *)at);
		key(e, k->bit, k->name, v, gpumem_json_int(*(const int *)at));
		break;
	case GPUMEM_KT_SIZE:
	case GPUMEM_KT_POW2SIZE:
		gpumem_format_size(*(const uint64_t *)at, v, sizeof(v));
		key(e, k->bit, k->name, v, gpumem_json_string(v));
		break;
	case GPUMEM_KT_ENUM:
		key(e, k->bit, k->name, gpumem_enum_name(k->names, (unsigned)*(const int *)at),
		    gpumem_json_string(gpumem_enum_name(k->names, (unsigned)*(const int *)at)));
		break;
	case GPUMEM_KT_ENUM_LIST:
		list_key(e, k, *(const unsigned *)at);
		break;
	case GPUMEM_KT_FRACTION_AUTO:
		if (*(const double *)at == GPUMEM_FRACTION_AUTO) {
			key(e, k->bit, k->name, "auto", gpumem_json_string("auto"));
			break;
		}
		/* fall through */
	case GPUMEM_KT_FRACTION:
	case GPUMEM_KT_PERCENT:
		double_key(e, k, *(const double *)at);
		break;
	case GPUMEM_KT_L2LIMIT:
		l2limit_key(e, k, p);
		break;
	default:                        /* no policy key has another type */
		break;
	}
}

static void keys(struct emitter *e, const struct gpumem_key *ks, const struct gpumem_policy *p)
{
	for (const struct gpumem_key *k = ks; k->name; k++) {
		if (k->type == GPUMEM_KT_SECTION)
			sub_section(e, k, p);
		else
			value_key(e, k, p);
	}
}

/* One section, every key of it ("{}" in YAML when none is written). */
static void section(struct emitter *e, const struct gpumem_key *s, const struct gpumem_policy *p)
{
	if (e->root) {
		e->sec = json_object_new_object();
		gpumem_json_add(e->root, s->name, e->sec);
	} else {
		fprintf(e->f, "%s:\n", s->name);
	}
	e->nkey = 0;
	e->indent = "  ";
	if (!e->root && s->unset && !(p->sections & s->bit) && !e->only_set)
		fprintf(e->f, "  # no %s section: %s\n", s->name, s->unset);
	keys(e, s->sub, p);
	if (!e->root && e->nkey == 0)
		fprintf(e->f, "  {}\n");
}

char *gpumem_policy_format(const struct gpumem_policy *p, enum gpumem_fmt fmt, int only_set)
{
	struct emitter e = { NULL, NULL, NULL, "  ", only_set, p->set, 0 };
	char *out = NULL;
	size_t len = 0;

	if (fmt == GPUMEM_FMT_JSON) {
		e.root = json_object_new_object();
		if (e.root == NULL)
			return NULL;
		gpumem_json_add(e.root, "version", gpumem_json_int(1));
	} else {
		e.f = open_memstream(&out, &len);
		if (e.f == NULL)
			return NULL;
		fprintf(e.f, "version: 1\n");
	}
	for (const struct gpumem_key *s = gpumem_policy_sections; s->name; s++)
		if (!only_set || (p->sections & s->bit))
			section(&e, s, p);
	if (e.root) {
		out = gpumem_json_dump(e.root, GPUMEM_JSON_SPACED);
		json_object_put(e.root);
		return out;
	}
	if (fclose(e.f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}
