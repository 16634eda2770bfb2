/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FNV-1a (hash.h): one loop for every caller, so that a name hashed in one
 * program reads the same in another.
 */
#include "hash.h"

uint64_t gpumem_fnv1a(uint64_t h, const void *s, size_t len)
{
	for (const unsigned char *c = s; len--; c++)
		h = (h ^ *c) * 1099511628211ULL;
	return h;
}
