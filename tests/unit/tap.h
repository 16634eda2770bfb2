/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A few TAP helpers for the C unit tests (automake's tap-driver reads them). */
#ifndef GPUMEM_TAP_H
#define GPUMEM_TAP_H
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...) do { \
	int ok_ = !!(cond); \
	printf("%s %d - ", ok_ ? "ok" : "not ok", ++tap_n); \
	printf(__VA_ARGS__); printf("\n"); \
	if (!ok_) { tap_failed++; printf("#   failed at %s:%d\n", __FILE__, __LINE__); } \
} while (0)

#define is_int(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	ok(g_ == w_, __VA_ARGS__); \
	if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_); \
} while (0)

#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	int e_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_; \
	ok(e_, __VA_ARGS__); \
	if (!e_) printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
} while (0)

#define like(got, needle, ...) do { \
	const char *g_ = (got), *n_ = (needle); \
	int e_ = g_ && strstr(g_, n_) != NULL; \
	ok(e_, __VA_ARGS__); \
	if (!e_) printf("#   '%s' does not contain '%s'\n", g_ ? g_ : "(null)", n_); \
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
#endif
