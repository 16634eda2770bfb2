/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The words of the report model that every part of `gpumem report` shares:
 * metric ids and verdict-class names (the metric names are core's,
 * report_head.c), the natural order of node names and the order of the
 * rows (worst first), and the ISO 8601 times of reports and of --since (or
 * an age before now).  Kept apart from report_load.c, which reads files,
 * so the loader stays one subject.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "report_cli.h"

int gpumem_report_metric_id(const char *name)
{
	for (int i = 0; i < GPUMEM_REPORT_NMETRICS; i++)
		if (!strcmp(name, gpumem_report_metric_names[i]))
			return i;
	return -1;
}

static const char *const vclass_names[GPUMEM_REPORT_NV] = {
	"fail", "unusable", "error", "warn", "skipped", "not_run", "pass"
};

const char *gpumem_report_vclass_name(enum gpumem_report_vclass v)
{
	return (unsigned)v < GPUMEM_REPORT_NV ? vclass_names[v] : "error";
}

/*
 * gpumem-check writes "pass (no reference)" and "not run"; anything we do
 * not know is an error, so a verdict from a newer writer is seen, not
 * mistaken for a pass.
 */
enum gpumem_report_vclass gpumem_report_vclass_of(const char *v)
{
	if (v == NULL)
		return GPUMEM_REPORT_V_ERROR;
	if (!strncmp(v, "pass", 4))
		return GPUMEM_REPORT_V_PASS;
	if (!strcmp(v, "not run") || !strcmp(v, "not_run"))
		return GPUMEM_REPORT_V_NOT_RUN;
	for (int i = 0; i < GPUMEM_REPORT_NV; i++)
		if (!strcmp(v, vclass_names[i]))
			return (enum gpumem_report_vclass)i;
	return GPUMEM_REPORT_V_ERROR;
}

int gpumem_report_vclass_rank(enum gpumem_report_vclass v)
{
	return v == GPUMEM_REPORT_V_NOT_RUN ? GPUMEM_REPORT_V_SKIPPED : (int)v;
}

int gpumem_report_natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *ea = a, *eb = b;

			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (ea = a; isdigit((unsigned char)*ea); ea++)
				;
			for (eb = b; isdigit((unsigned char)*eb); eb++)
				;
			if (ea - a != eb - b)
				return ea - a < eb - b ? -1 : 1;
			for (; a < ea; a++, b++)
				if (*a != *b)
					return *a < *b ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

static int digits(const char **s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)**s))
			return -1;
		v = v * 10 + (**s - '0');
		(*s)++;
	}
	*out = v;
	return 0;
}

/* Days from 1970-01-01 of a proleptic Gregorian date (no timegm needed). */
static long long days_from_civil(int y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int gpumem_report_parse_time(const char *s, time_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, sec = 0, zone = 0, off = 0;

	if (digits(&s, 4, &y) < 0 || *s++ != '-' || digits(&s, 2, &mo) < 0 || *s++ != '-' ||
	    digits(&s, 2, &d) < 0)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
		return -1;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (digits(&s, 2, &h) < 0 || *s++ != ':' || digits(&s, 2, &mi) < 0)
			return -1;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &sec) < 0)
				return -1;
			if (*s == '.' || *s == ',') {
				s++;
				if (!isdigit((unsigned char)*s))
					return -1;
				while (isdigit((unsigned char)*s))
					s++;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return -1;
	}
	if (*s == 'Z' || *s == 'z') {
		zone = 1;
		s++;
	} else if (*s == '+' || *s == '-') {
		int sign = *s++ == '-' ? -1 : 1, oh, om = 0;

		if (digits(&s, 2, &oh) < 0)
			return -1;
		if (*s == ':')
			s++;
		if (isdigit((unsigned char)*s) && digits(&s, 2, &om) < 0)
			return -1;
		if (oh > 23 || om > 59)
			return -1;
		zone = 1;
		off = sign * (oh * 3600 + om * 60);
	}
	if (*s != '\0')
		return -1;
	if (zone) {
		*out = (time_t)(days_from_civil(y, mo, d) * 86400LL + h * 3600 + mi * 60 + sec - off);
	} else {
		struct tm tm = { 0 };

		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		*out = mktime(&tm);
	}
	return 0;
}

int gpumem_report_parse_since(const char *s, time_t now, time_t *out)
{
	static const struct { char unit; long long secs; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 7 * 86400 }
	};
	const long long most = 100LL * 366 * 86400;    /* a century */
	char *end;
	long long n;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (end != s && isdigit((unsigned char)s[0]) && end[0] && !end[1] && !errno && n <= most) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (end[0] == units[i].unit && n <= most / units[i].secs) {
				*out = now - (time_t)(n * units[i].secs);
				return 0;
			}
		}
	}
	return gpumem_report_parse_time(s, out);
}

/* Worst first, then newest; the rest only makes the order total (qsort of row pointers). */
int gpumem_report_row_rank(const struct gpumem_report_row *r)
{
	int rank = 2 * gpumem_report_vclass_rank(r->vclass);
	int slow = 2 * gpumem_report_vclass_rank(GPUMEM_REPORT_V_WARN) + 1;

	return r->vs.slow && rank > slow ? slow : rank;
}

int gpumem_report_cmp_rows(const void *pa, const void *pb)
{
	const struct gpumem_report_row *a = *(const struct gpumem_report_row *const *)pa;
	const struct gpumem_report_row *b = *(const struct gpumem_report_row *const *)pb;
	int ra = gpumem_report_row_rank(a), rb = gpumem_report_row_rank(b);
	int c;

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->vs.slow && b->vs.slow && a->vs.ratio != b->vs.ratio)
		return a->vs.ratio < b->vs.ratio ? -1 : 1;
	if (a->rep->time != b->rep->time)
		return a->rep->time > b->rep->time ? -1 : 1;
	if ((c = gpumem_report_natcmp(a->rep->node, b->rep->node)) != 0)
		return c;
	if (a->rep->job != b->rep->job)
		return a->rep->job > b->rep->job ? -1 : 1;
	if ((c = strcmp(a->rep->step, b->rep->step)) != 0)
		return c;
	if ((c = strcmp(a->rep->phase, b->rep->phase)) != 0)
		return c;
	if (gpumem_report_gpu_index(a) != gpumem_report_gpu_index(b))
		return gpumem_report_gpu_index(a) < gpumem_report_gpu_index(b) ? -1 : 1;
	return strcmp(a->rep->name, b->rep->name);
}

/* The node's GPU index when the report says it, else the CUDA ordinal. */
int gpumem_report_gpu_index(const struct gpumem_report_row *r)
{
	return r->node_index >= 0 ? r->node_index : r->cuda_index;
}

/* "NVIDIA H200" is as clear as "H200" and takes a column; "?" for none. */
const char *gpumem_report_short_model(const char *name)
{
	if (name == NULL)
		return "?";
	return strncmp(name, "NVIDIA ", 7) ? name : name + 7;
}

/* t as the table, the summary and the picture show it: "2026-11-22 03:40" (UTC). */
void gpumem_report_utc(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}
