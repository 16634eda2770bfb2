/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a report file and a gpumem-check document (report.h) under their
 * caps: json.h's strict parse, with the caps of the record they are.  Here
 * rather than in json.c so that the JSON module knows no record.
 */
#include <stdio.h>
#include <string.h>
#include "core_base.h"
#include "report.h"

static const struct gpumem_json_caps report_caps = {
	GPUMEM_REPORT_MAX_FILE_BYTES, GPUMEM_REPORT_JSON_MAX_DEPTH,
	GPUMEM_REPORT_JSON_MAX_VALUES, "a report"
};
static const struct gpumem_json_caps check_caps = {
	GPUMEM_CHECK_MAX_BYTES, GPUMEM_CHECK_JSON_MAX_DEPTH,
	GPUMEM_CHECK_JSON_MAX_VALUES, "a gpumem-check document"
};

int gpumem_json_parse_report(const char *buf, size_t len, struct json_object **out,
			     char *err, size_t errlen)
{
	return gpumem_json_parse_report_with(NULL, buf, len, out, err, errlen);
}

int gpumem_json_parse_report_with(struct json_tokener **keep, const char *buf, size_t len,
				  struct json_object **out, char *err, size_t errlen)
{
	return gpumem_json_parse_with(keep, buf, len, &report_caps, out, err, errlen);
}

int gpumem_json_parse_check(const char *buf, size_t len, struct json_object **out,
			    char *err, size_t errlen)
{
	const char *schema;

	if (gpumem_json_parse(buf, len, &check_caps, out, err, errlen) < 0)
		return -1;
	schema = gpumem_json_str(*out, "schema");
	if (schema && !strcmp(schema, "gpumem-check/1"))
		return 0;
	if (!gpumem_json_is(*out, json_type_object))
		snprintf(err, errlen, "not a gpumem-check/1 document: not an object");
	else if (schema == NULL)
		snprintf(err, errlen, "not a gpumem-check/1 document: no \"schema\" string");
	else
		snprintf(err, errlen, "not a gpumem-check/1 document: schema \"%.60s\"", schema);
	json_object_put(*out);
	*out = NULL;
	return -1;
}
