/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes with units, numbers and UTF-8 as text (units.c). */
#ifndef GPUMEM_UNITS_H
#define GPUMEM_UNITS_H
#include <stddef.h>
#include <stdint.h>

/* "40GiB", "512 KiB", "1M", "1073741824": 0 on success, else -1 and *why. */
int gpumem_parse_size(const char *s, uint64_t *out, const char **why);
void gpumem_format_size(uint64_t v, char *buf, size_t len);
/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is invalid
 * (overlong forms, surrogates and code points past U+10FFFF included). */
size_t gpumem_utf8_len(const unsigned char *s, size_t avail);
/* A double that parses back to itself (no %g rounding to 6 digits). */
void gpumem_format_double(double v, char *buf, size_t len);
#endif
