/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One small non-cryptographic hash for names and keys that must not be
 * kept as they are (the hint file's job names, the report cache's file
 * name, a pass record's digest of the site's references).
 */
#ifndef GPUMEM_HASH_H
#define GPUMEM_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's 64-bit offset basis: where a hash usually starts. */
#define GPUMEM_FNV1A_BASIS 14695981039346656037ULL

/* FNV-1a, 64 bits: LEN bytes of S folded into H. */
uint64_t gpumem_fnv1a(uint64_t h, const void *s, size_t len);

#endif
