/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prints every key of the policy and site file formats, from the key tables
 * themselves (plugin/core/policy/policy.c, site.c), one per line: "section NAME"
 * for each policy section, "policy SECTION.KEY" and "site KEY" (the keys of
 * one rule of the site's advice: list as "site advice.KEY").  Not a test
 * by itself: tests/cli/docs.sh checks the docs against what it prints, so
 * a key added to a table and not to the docs fails the suite.
 */
#include <stdio.h>
#include "core_policy.h"

static void put(const char *name, const struct gpumem_key *k, void *arg)
{
	(void)k;
	printf("%s %s\n", (const char *)arg, name);
}

int main(void)
{
	for (int i = 0; gpumem_section_names[i]; i++)
		printf("section %s\n", gpumem_section_names[i]);
	printf("policy version\n");
	gpumem_keys_each(gpumem_policy_sections, "", put, "policy");
	gpumem_keys_each(gpumem_site_keys, "", put, "site");
	gpumem_keys_each(gpumem_advice_rule_keys, "advice", put, "site");
	return 0;
}
