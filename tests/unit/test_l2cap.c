/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cap on the persisting-L2 set-aside per GPU model (plugin/core/l2cap.c):
 * the table's lookup, the site's limits.l2_model_max_percent over it, the
 * cost between measured points and the words of the warning.
 */
#include <string.h>
#include "core_policy.h"
#include "tap.h"

static int site(const char *text, struct gpumem_site *s, struct gpumem_diags *d)
{
	return gpumem_site_parse(text, strlen(text), "site.yaml", s, d);
}

/* The first diagnostic's text, "" when there is none. */
static const char *warning(const struct gpumem_diags *d)
{
	return d->head ? d->head->msg : "";
}

int main(void)
{
	const char *h200[] = { "NVIDIA H200" }, *h100[] = { "NVIDIA H100 80GB HBM3" };
	const char *mixed[] = { "NVIDIA H200", "Some GPU" }, *none[] = { "" };
	const struct gpumem_l2model *m = gpumem_l2cap_model("nvidia h200");
	struct gpumem_diags d = { 0 };
	struct gpumem_site s;
	enum gpumem_l2cap_src src;
	char cost[96];
	double pct;

	/* The table: by the driver's name, any case; unmeasured models are not in it. */
	ok(m && !strcmp(m->model, "NVIDIA H200"), "NVIDIA H200 is in the table (any case)");
	ok(gpumem_l2cap_model("NVIDIA H100 80GB HBM3") == NULL, "the H100 is not (not measured)");
	ok(gpumem_l2cap_model(NULL) == NULL && gpumem_l2cap_model("") == NULL, "no name, no entry");
	is_int((int)gpumem_l2cap_for(NULL, "NVIDIA H200", &src), 18, "H200's cap: 18%%");
	is_int(src, GPUMEM_L2CAP_TABLE, "... from the table");
	is_int((int)gpumem_l2cap_for(NULL, "NVIDIA H100 80GB HBM3", &src), 18, "H100: 18%%");
	is_int(src, GPUMEM_L2CAP_DEFAULT, "... gpumem's cap for unmeasured models");
	is_int((int)gpumem_l2cap_for(NULL, NULL, &src), 18, "no model known: 18%%");
	is_int(src, GPUMEM_L2CAP_DEFAULT, "... the same cap");

	/* The point: the driver grants sixteenths of L2, rounding up. */
	ok(gpumem_l2cap_point(m, 0)->percent == 18.75, "0%%: the first point (3/16)");
	ok(gpumem_l2cap_point(m, 18)->percent == 18.75, "18%% is granted as 18.75%%");
	ok(gpumem_l2cap_point(m, 18.75)->percent == 18.75, "18.75%% is itself");
	ok(gpumem_l2cap_point(m, 20)->percent == 25, "20%% is granted as 25%%");
	ok(gpumem_l2cap_point(m, 50)->percent == 50, "50%% is 8/16");
	ok(gpumem_l2cap_point(m, 100)->percent == 62.5, "past the GPU's maximum: its last point");
	/* The cost: triad and write, or nothing. */
	gpumem_l2cap_cost(m, 50, cost, sizeof(cost));
	is_str(cost, "27% of its triad bandwidth (31% of its write bandwidth)", "50%% on an H200");
	gpumem_l2cap_cost(m, 20, cost, sizeof(cost));
	is_str(cost, "1% of its triad bandwidth (9% of its write bandwidth)", "20%% (granted 25%%)");
	gpumem_l2cap_cost(m, 62, cost, sizeof(cost));
	is_str(cost, "60% of its triad bandwidth (65% of its write bandwidth)", "62%%");
	gpumem_l2cap_cost(m, 18, cost, sizeof(cost));
	is_str(cost, "nothing measurable of its HBM bandwidth", "18%%: nothing");

	/* Applying it: the warning names the GPU, the asked share, its cost and the cap. */
	pct = 50;
	is_int((int)gpumem_l2cap_apply(NULL, h200, 1, &pct, NULL, &d), 18, "applied: 18%%");
	is_int((int)pct, 18, "50%% on an H200 becomes 18%%");
	is_str(warning(&d), "50% of L2 would cost this GPU (NVIDIA H200) 27% of its triad bandwidth "
	       "(31% of its write bandwidth): capped at 18%", "the warning says what it would cost");
	is_str(d.head ? d.head->file : "", "l2.persisting_limit", "... under the key");
	gpumem_diags_free(&d);
	pct = 15;
	gpumem_l2cap_apply(NULL, h200, 1, &pct, NULL, &d);
	ok((int)pct == 15 && d.head == NULL, "15%% is below the cap: kept, nothing said");
	pct = 50;
	gpumem_l2cap_apply(NULL, h100, 1, &pct, "p.yaml", &d);
	is_int((int)pct, 18, "an unmeasured model: 18%%");
	like(warning(&d), "l2.persisting_limit: 50% of L2 on this GPU (NVIDIA H100 80GB HBM3), "
	     "whose set-aside cost gpumem has not measured", "... said, naming it");
	like(warning(&d), "capped at 18%, gpumem's cap for GPU models it has not measured",
	     "... and whose cap it is");
	is_str(d.head ? d.head->file : "", "p.yaml", "... under the file given");
	gpumem_diags_free(&d);
	pct = 40;
	gpumem_l2cap_apply(NULL, none, 1, &pct, NULL, &d);
	like(warning(&d), "40% of L2 on a GPU model not known here (it would cost an NVIDIA H200 20% "
	     "of its triad bandwidth (31% of its write bandwidth)): capped at 18%",
	     "no model known: the unmeasured cap");
	gpumem_diags_free(&d);

	{
		const char *odd[] = { "GPU\nforged line" };

		pct = 50;
		gpumem_l2cap_apply(NULL, odd, 1, &pct, NULL, &d);
		like(warning(&d), "this GPU (GPU\\nforged line)", "a model's name is escaped (it reaches a log)");
		gpumem_diags_free(&d);
	}

	/* The site's key raises a model's cap, sets the one for the others. */
	gpumem_site_init(&s);
	is_int(site("version: 1\nlimits:\n  l2_model_max_percent:\n    NVIDIA H200: 40%\n"
		    "    other: 10\n", &s, &d), 0, "limits.l2_model_max_percent parses");
	is_int((int)gpumem_l2cap_for(&s.limits.l2_caps, "NVIDIA H200", &src), 40,
	       "the site raises H200 to 40%%");
	is_int(src, GPUMEM_L2CAP_SITE, "... its source");
	is_int((int)gpumem_l2cap_for(&s.limits.l2_caps, "NVIDIA H100 80GB HBM3", &src), 10,
	       "other: the site's cap for the models it does not name");
	is_int(src, GPUMEM_L2CAP_SITE_OTHER, "... its source");
	pct = 50;
	gpumem_l2cap_apply(&s.limits.l2_caps, h200, 1, &pct, NULL, &d);
	is_int((int)pct, 40, "50%% under the site's 40%%: 40%%");
	like(warning(&d), "50% of L2 would cost this GPU (NVIDIA H200) 27% of its triad bandwidth "
	     "(31% of its write bandwidth): capped at 40%, the site's cap for it "
	     "(limits.l2_model_max_percent)",
	     "... said, naming the site's key");
	gpumem_diags_free(&d);
	pct = 30;
	gpumem_l2cap_apply(&s.limits.l2_caps, mixed, 2, &pct, NULL, &d);
	is_int((int)pct, 10, "two models on one node: the smaller cap");
	like(warning(&d), "this GPU (Some GPU)", "... said of the GPU that has it");
	gpumem_diags_free(&d);

	/* Bad site values: each names its key and place. */
	is_int(site("version: 1\nlimits:\n  l2_model_max_percent:\n    NVIDIA H200: 101\n",
		    &s, &d), -1, "101%% refused");
	like(warning(&d), "limits.l2_model_max_percent.NVIDIA H200: 101 is out of range",
	     "... naming the key");
	is_int(d.head ? d.head->line : 0, 4, "... and its line");
	gpumem_diags_free(&d);
	is_int(site("version: 1\nlimits:\n  l2_model_max_percent:\n    a: 1\n    A: 2\n", &s, &d),
	       -1, "a model twice (any case) refused");
	like(warning(&d), "'A' is listed twice", "... said");
	gpumem_diags_free(&d);
	is_int(site("version: 1\nlimits:\n  l2_model_max_percent: 40\n", &s, &d), -1,
	       "a bare percent refused (a mapping is wanted)");
	gpumem_diags_free(&d);
	gpumem_site_free(&s);
	return tap_done();
}
