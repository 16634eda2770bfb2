/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes, units and names. */
#include <stdint.h>
#include "core_policy.h"
#include "tap.h"

static uint64_t size_of(const char *s, int *ok_)
{
	const char *why = NULL;
	uint64_t v = 0;

	*ok_ = gpumem_parse_size(s, &v, &why) == 0;
	return v;
}

int main(void)
{
	char buf[64];
	const char *why = NULL;
	uint64_t v;
	int good;

	is_int(size_of("0", &good), 0, "0 bytes");
	is_int(size_of("1048576", &good), 1048576, "plain bytes");
	is_int(size_of("512KiB", &good), 512 * 1024, "KiB");
	is_int(size_of("1M", &good), 1 << 20, "M is MiB, as Slurm reads --mem");
	is_int(size_of("40 GiB", &good), 40ULL << 30, "a space before the unit");
	is_int(size_of("2TiB", &good), 2ULL << 40, "TiB");
	is_int(size_of("16B", &good), 16, "B");
	ok(gpumem_parse_size("40GB", &v, &why) < 0, "decimal GB refused");
	like(why, "ambiguous", "... as ambiguous");
	ok(gpumem_parse_size("4 parsecs", &v, &why) < 0, "unknown unit refused");
	ok(gpumem_parse_size("-1", &v, &why) < 0, "negative refused");
	ok(gpumem_parse_size("", &v, &why) < 0, "empty refused");
	ok(gpumem_parse_size("18446744073709551615", &v, &why) == 0 && v == UINT64_MAX,
	   "UINT64_MAX accepted");
	ok(gpumem_parse_size("18446744073709551616", &v, &why) < 0, "UINT64_MAX + 1 refused");
	like(why, "too large", "... as too large");
	ok(gpumem_parse_size("16777216TiB", &v, &why) < 0, "2^64 via a unit refused");
	like(why, "overflows", "... as an overflow");

	gpumem_format_size(40ULL << 30, buf, sizeof(buf));
	is_str(buf, "40GiB", "format 40GiB");
	gpumem_format_size(1536, buf, sizeof(buf));
	is_str(buf, "1536", "format 1536 stays bytes... in KiB units only when exact");
	gpumem_format_size(3 << 10, buf, sizeof(buf));
	is_str(buf, "3KiB", "format 3KiB");
	gpumem_format_size(0, buf, sizeof(buf));
	is_str(buf, "0", "format 0");

	is_str(gpumem_loc_name(GPUMEM_LOC_CPU), "cpu", "loc cpu");
	is_str(gpumem_daemon_name(GPUMEM_DAEMON_JOB), "job", "daemon job");
	is_str(gpumem_onfail_name(GPUMEM_ONFAIL_DRAIN), "drain", "on_fail drain");
	return tap_done();
}
