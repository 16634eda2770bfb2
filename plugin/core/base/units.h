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
/* Whether S (LEN bytes) holds a byte above 0x7f. */
int gpumem_utf8_has_high(const char *s, size_t len);
/*
 * S (LEN bytes, valid UTF-8) with every character beyond ASCII as a JSON
 * \u escape (a surrogate pair past U+FFFF), NUL-ended, its length in
 * *OUT_LEN; malloc'd, NULL when out of memory.  Inside a JSON string it
 * means the same characters; gpumem_utf8_json_unescaped_at maps an offset
 * AT of the escaped text back to S.
 */
char *gpumem_utf8_json_escape(const char *s, size_t len, size_t *out_len);
size_t gpumem_utf8_json_unescaped_at(const char *s, size_t len, size_t at);
/* A double that parses back to itself (no %g rounding to 6 digits). */
void gpumem_format_double(double v, char *buf, size_t len);
#endif
