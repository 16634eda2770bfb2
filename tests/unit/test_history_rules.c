/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A GPU against its own history (plugin/spank/check/history_rules.c): the file's
 * text both ways, the passes kept, the median and the margins of each
 * class of figure, and the bad line that starts the history afresh.
 */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "history_rules.h"

/* A pass whose every figure is F, host figures H. */
static struct gpumem_hist_pass pass_of(long long sec, double f, double h)
{
	struct gpumem_hist_pass p = { .sec = sec };

	for (int i = 0; i < GPUMEM_HIST_NFIG; i++)
		p.fig[i] = i >= 5 ? h : f;
	return p;
}

static void test_text(void)
{
	struct gpumem_hist h, back;
	struct gpumem_hist_pass p = pass_of(100, 4100, 55);
	char buf[2048], why[200];

	memset(&h, 0, sizeof(h));
	p.fig[1] = 0;
	gpumem_hist_add(&h, &p);
	is_int(gpumem_hist_format(&h, buf, sizeof(buf)), 0, "formatted");
	is_str(buf, "100 4100.00 - 4100.00 4100.00 4100.00 55.00 55.00\n", "one line per pass, - unmeasured");
	is_int(gpumem_hist_parse(buf, &back, why, sizeof(why)), 0, "parsed back");
	ok(back.n == 1 && back.pass[0].sec == 100 && back.pass[0].fig[1] == 0 &&
	   back.pass[0].fig[3] == 4100, "the same pass");
	is_int(gpumem_hist_parse("100 1 2 3\n", &back, why, sizeof(why)), -1, "a short line: refused");
	like(why, "line 1", "naming the line");
	ok(back.n == 0, "and nothing kept");
	is_int(gpumem_hist_parse("100 1 2 3 4 5 6 7\nx 1 2 3 4 5 6 7\n", &back, why, sizeof(why)), -1,
	       "a bad time on line 2: refused");
	like(why, "line 2", "naming line 2");
	is_int(gpumem_hist_parse("100 1 2 3 4 5 6 -7\n", &back, why, sizeof(why)), -1,
	       "a negative figure: refused");
	is_int(gpumem_hist_parse(NULL, &back, why, sizeof(why)), 0, "no file: no pass");
	ok(back.n == 0, "empty");
	for (int k = 0; k < GPUMEM_HIST_KEEP + 3; k++) {
		p = pass_of(k, 1000 + k, 50);
		gpumem_hist_add(&h, &p);
	}
	ok(h.n == GPUMEM_HIST_KEEP && h.pass[0].sec == 3, "keeps the last %d passes, oldest dropped",
	   GPUMEM_HIST_KEEP);
	is_int(gpumem_hist_format(&h, buf, sizeof(buf)), 0, "a full history fits its buffer");
}

static void test_below(void)
{
	struct gpumem_hist h;
	struct gpumem_hist_pass now;
	char why[600];

	memset(&h, 0, sizeof(h));
	for (int k = 0; k < 2; k++) {
		now = pass_of(k, 4100, 55);
		gpumem_hist_add(&h, &now);
	}
	now = pass_of(9, 4100 * 0.8, 55 * 0.8);
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 0, "two passes: too few to judge");
	now = pass_of(2, 4000, 50);
	gpumem_hist_add(&h, &now);
	now = pass_of(9, 4100 * 0.8, 55);
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 5, "20%% below on 5 memory figures");
	like(why, "triad 3280.0 GB/s is 20% below its median 4100.0 of 3 passes (margin 5%)",
	     "names the figure, how far, the median, the passes and the margin");
	now = pass_of(9, 4100 * 0.97, 55 * 0.97);
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 0, "3%% below: within the margin");
	now = pass_of(9, 4100 * 0.94, 55 * 0.90);
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 5, "6%% below: the memory figures warn");
	ok(!strstr(why, "h2d"), "h2d 10%% below: within the host link's 15%%");
	now = pass_of(9, 4100, 55 * 0.8);
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 2, "h2d and d2h 20%% below: warn");
	like(why, "(margin 15%)", "with the host link's margin");
	now = pass_of(9, 4100, 55);
	now.fig[3] = 0;
	is_int(gpumem_hist_below(&h, &now, why, sizeof(why)), 0, "a figure not measured now: not judged");
}

int main(void)
{
	test_text();
	test_below();
	return tap_done();
}
