/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The head of a gpumem-report/1 file (doc/REPORT-JSON.md, "The head line").
 * Its first line holds the report's own fields, "rows" (one compact row per
 * GPU: what `gpumem report` shows, copied from the check document) and
 * "check_reason", and ends with a comma; the policy and the whole check
 * follow on the next line.  A reader of 100,000 files parses that line
 * alone: a fifth of the bytes, a quarter of the values json-c builds.  A file
 * without it (written before, or by hand) is read whole, and its rows are
 * made from its check here, the same way, so both readings agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core_base.h"
#include "report.h"

const char *const gpumem_report_metric_names[GPUMEM_REPORT_NMETRICS] = {
	"read", "write", "copy", "triad", "d2d", "h2d", "d2h"
};

/* A row's metric: [verdict, best, median, reference, threshold, warn floor]. */
static const char *const metric_keys[] = { "verdict", "best_gbps", "median_gbps",
					   "reference_gbps", "threshold_gbps", "warn_floor_gbps" };

/* Member KEY of SRC again (the same json-c value: its text is kept), or NULL. */
static struct json_object *same(struct json_object *src, const char *key)
{
	return json_object_get(gpumem_json_get(src, key));
}

/* A string member, or NULL (null) for anything else. */
static struct json_object *str_or_null(struct json_object *src, const char *key)
{
	return gpumem_json_is(gpumem_json_get(src, key), json_type_string) ? same(src, key) : NULL;
}

/* A number member, or NULL (null) for anything else. */
static struct json_object *num_or_null(struct json_object *src, const char *key)
{
	double v;

	return gpumem_json_num(src, key, &v) == 0 ? same(src, key) : NULL;
}

static struct json_object *metric_row(struct json_object *m)
{
	struct json_object *a = json_object_new_array_ext(6);

	if (a == NULL)
		return NULL;
	json_object_array_add(a, str_or_null(m, metric_keys[0]));
	for (size_t k = 1; k < sizeof(metric_keys) / sizeof(metric_keys[0]); k++)
		json_object_array_add(a, num_or_null(m, metric_keys[k]));
	return a;
}

/* The strings of a "reasons" array, in order; anything else in it is left out. */
static struct json_object *reasons_row(struct json_object *arr)
{
	struct json_object *out = json_object_new_array();

	for (size_t i = 0; out && i < gpumem_json_len(arr); i++)
		if (gpumem_json_is(gpumem_json_at(arr, i), json_type_string))
			json_object_array_add(out, json_object_get(gpumem_json_at(arr, i)));
	return out;
}

static struct json_object *device_row(struct json_object *dev)
{
	struct json_object *row = json_object_new_object(), *metrics, *src;

	if (row == NULL)
		return NULL;
	gpumem_json_add(row, "index", num_or_null(dev, "index"));
	gpumem_json_add(row, "name", str_or_null(dev, "name"));
	gpumem_json_add(row, "uuid", str_or_null(dev, "uuid"));
	gpumem_json_add(row, "pci_bus_id", str_or_null(dev, "pci_bus_id"));
	gpumem_json_add(row, "verdict", str_or_null(dev, "verdict"));
	gpumem_json_add(row, "reasons", reasons_row(gpumem_json_get(dev, "reasons")));
	metrics = json_object_new_object();
	src = gpumem_json_get(dev, "metrics");
	for (int i = 0; metrics && i < GPUMEM_REPORT_NMETRICS; i++) {
		struct json_object *m = gpumem_json_get(src, gpumem_report_metric_names[i]);

		if (gpumem_json_is(m, json_type_object))
			gpumem_json_add(metrics, gpumem_report_metric_names[i], metric_row(m));
	}
	gpumem_json_add(row, "metrics", metrics);
	return row;
}

int gpumem_report_rows_of(struct json_object *check, struct json_object **rows, char *err,
			  size_t errlen)
{
	struct json_object *devices;

	*rows = NULL;
	if (check && !gpumem_json_is(check, json_type_object)) {
		snprintf(err, errlen, "\"check\" is neither an object nor null");
		return -1;
	}
	devices = gpumem_json_get(check, "devices");
	*rows = json_object_new_array();
	if (*rows == NULL)
		goto oom;
	for (size_t i = 0; i < gpumem_json_len(devices); i++) {
		struct json_object *dev = gpumem_json_at(devices, i), *row;

		if (!gpumem_json_is(dev, json_type_object)) {
			snprintf(err, errlen, "check.devices[%zu] is not an object", i);
			goto fail;
		}
		row = device_row(dev);
		if (row == NULL || json_object_array_add(*rows, row) < 0) {
			json_object_put(row);
			goto oom;
		}
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	json_object_put(*rows);
	*rows = NULL;
	return -1;
}

const char *gpumem_report_check_reason(struct json_object *check)
{
	return gpumem_json_str(gpumem_json_get(check, "overall"), "reason");
}

void gpumem_report_basis(struct json_object *dev, const char *const *names, size_t n, char *buf,
			 size_t len)
{
	static const char peak[] = " of this GPU's peak";
	const size_t pl = sizeof(peak) - 1;
	char ref[16] = "", fr[160] = "", nj[160] = "";
	size_t lf = 0, ln = 0;

	for (size_t m = 0; m < n; m++) {
		const char *b = gpumem_json_str(gpumem_json_get(gpumem_json_get(dev, "metrics"),
								names[m]), "basis");
		size_t bl = b ? strlen(b) : 0;

		if (!b)
			continue;
		if (!strcmp(b, "site reference"))
			snprintf(ref, sizeof(ref), "site reference");
		else if (bl > pl && !strcmp(b + bl - pl, peak) && lf < sizeof(fr))
			lf += (size_t)snprintf(fr + lf, sizeof(fr) - lf, "%s%s %.*s", lf ? ", " : "",
					       names[m], (int)(bl - pl), b);
		else if (ln < sizeof(nj))
			ln += (size_t)snprintf(nj + ln, sizeof(nj) - ln, "%s%s %.60s", ln ? ", " : "",
					       names[m], b);
	}
	snprintf(buf, len, "%s%s%s%s%s%s", ref, ref[0] && fr[0] ? "; " : "", fr, fr[0] ? peak : "",
		 (ref[0] || fr[0]) && nj[0] ? "; " : "", nj);
}

/* HEAD's text without its closing brace and newline, then the rest; NULL on failure. */
static char *join(struct json_object *head, const char *effective, const char *check,
		  const char *profile)
{
	char *h = gpumem_json_dump(head, GPUMEM_JSON_SPACED), *text = NULL;
	size_t hl = h ? strlen(h) : 0;

	if (hl < 3 || strcmp(h + hl - 2, "}\n")) {
		free(h);
		return NULL;
	}
	h[hl - 2] = '\0';
	if (asprintf(&text, "%s,\n \"effective\": %s, \"check\": %s%s%s}\n", h,
		     effective ? effective : "null", check ? check : "null",
		     profile ? ",\n \"profile\": " : "", profile ? profile : "") < 0)
		text = NULL;
	free(h);
	return text;
}

char *gpumem_report_text(struct json_object *head, const char *effective, const char *check,
			 struct json_object *check_doc, const char *profile)
{
	struct json_object *rows = NULL, *doc;
	char err[320], *text;

	/* No check: rows []; a check text without its document: no rows (read whole). */
	if ((!check || check_doc) && gpumem_report_rows_of(check_doc, &rows, err, sizeof(err)) == 0) {
		gpumem_json_add(head, "rows", rows);
		gpumem_json_add(head, "check_reason",
				gpumem_json_string(gpumem_report_check_reason(check_doc)));
	}
	text = join(head, effective, check, profile);
	/*
	 * Rows copied from a check near the caps could push the file past them
	 * (the check's caps leave the report 64 values, its rows may take
	 * more): the file is parsed as a reader would, and written without
	 * them when it does not pass.  Once per report, never on a reader's path.
	 */
	if (text && gpumem_json_parse_report(text, strlen(text), &doc, err, sizeof(err)) == 0) {
		json_object_put(doc);
		return text;
	}
	free(text);
	json_object_object_del(head, "rows");
	json_object_object_del(head, "check_reason");
	return join(head, effective, check, profile);
}
