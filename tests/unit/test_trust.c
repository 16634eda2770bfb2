/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugin/core/base/trust.c: the escaper every log line and report string goes
 * through, and the directory opener root writes reports with.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include "core_base.h"

static const char *esc(const char *in)
{
	static char buf[256];

	return gpumem_escape(buf, sizeof(buf), in);
}

static int opens(const char *path, char *why, size_t len)
{
	int fd = gpumem_dir_open_safe(path, why, len);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

int main(void)
{
	char small[8], why[512], base[256], p[512];

	is_str(esc("plain text 50% ok"), "plain text 50% ok", "printable ASCII unchanged");
	is_str(esc("a\nb\rc\td"), "a\\nb\\rc\\td", "newline, CR, tab made visible");
	is_str(esc("\x1b[2J\a"), "\\x1b[2J\\x07", "ESC and BEL as \\xNN");
	is_str(esc("back\\slash"), "back\\\\slash", "a backslash is doubled: escapes are ours");
	is_str(esc("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93", "printable UTF-8 kept");
	is_str(esc("\xc2\x9b" "31m"), "\\xc2\\x9b31m", "a C1 control (CSI) escaped");
	is_str(esc("\xe2\x80\xae" "x"), "\\xe2\\x80\\xaex", "a bidirectional override escaped");
	is_str(esc("\xff\xc0\x80"), "\\xff\\xc0\\x80", "invalid and overlong UTF-8 escaped");
	is_str(esc("\x7f"), "\\x7f", "DEL escaped");
	gpumem_escape(small, sizeof(small), "ab\ncd");
	is_str(small, "ab\\ncd", "fits exactly");
	gpumem_escape(small, sizeof(small), "abcde\x1b");
	is_str(small, "abcde", "never half an escape");
	gpumem_escape_fmt(why, sizeof(why), "gpumem: policy %s", "x\ngpumem: forged");
	is_str(why, "gpumem: policy x\\ngpumem: forged", "a formatted line is escaped whole");

	/* The one terminal cleaner: C0, C1, bidi become '?'. */
	gpumem_term_clean("caf\xc3\xa9 ok", why, sizeof(why), 40);
	is_str(why, "caf\xc3\xa9 ok", "terminal: printable UTF-8 kept");
	gpumem_term_clean("a\x1b[2Jb\n\x7f", why, sizeof(why), 40);
	is_str(why, "a?[2Jb??", "terminal: ESC, newline and DEL become '?'");
	gpumem_term_clean("\xc2\x9b" "31m", why, sizeof(why), 40);
	is_str(why, "?31m", "terminal: a C1 control (CSI, U+009B) becomes '?'");
	gpumem_term_clean("x\xe2\x80\xae" "evil\xe2\x81\xa6", why, sizeof(why), 40);
	is_str(why, "x?evil?", "terminal: bidirectional overrides and isolates become '?'");
	gpumem_term_clean("\xe2\x80\xa8\xff\xc0\x80", why, sizeof(why), 40);
	is_str(why, "????", "terminal: a line separator, invalid and overlong UTF-8 become '?'");
	is_int(gpumem_term_clean("abcdef", small, sizeof(small), 3), 3, "terminal: at most MAX characters");
	is_str(small, "abc", "... cut there");
	{
		int lo, hi;

		close(0);
		lo = open("/dev/null", O_RDONLY);
		hi = gpumem_fd_above_stdio(lo);
		ok(lo == 0 && hi > 2 && fcntl(0, F_GETFD) < 0, "a directory opened as fd 0 is moved to %d, "
		   "above the standard streams", hi);
	}

	snprintf(base, sizeof(base), "%s/gpumem-trust.XXXXXX", "/tmp");
	if (mkdtemp(base) == NULL || chmod(base, 0755) < 0) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	snprintf(p, sizeof(p), "%s/reports", base);
	ok(opens(p, why, sizeof(why)), "a missing last component is created");
	{
		struct stat st;

		ok(lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755,
		   "... a directory, mode 0755");
	}
	ok(opens(p, why, sizeof(why)), "an existing one is opened");
	snprintf(p, sizeof(p), "%s/link", base);
	if (symlink(base, p) < 0)
		return 1;
	ok(!opens(p, why, sizeof(why)), "a symbolic link as the last component is refused");
	like(why, "is a symbolic link", "... saying so");
	snprintf(p, sizeof(p), "%s/link/reports", base);
	ok(!opens(p, why, sizeof(why)), "a symbolic link earlier in the path is refused");
	snprintf(p, sizeof(p), "%s/open", base);
	mkdir(p, 0777);
	chmod(p, 0777);
	ok(!opens(p, why, sizeof(why)), "a world-writable last component is refused");
	like(why, "writable by others", "... saying so");
	snprintf(p, sizeof(p), "%s/open/x", base);
	ok(!opens(p, why, sizeof(why)), "a world-writable component without the sticky bit is refused");
	snprintf(p, sizeof(p), "%s/open", base);
	chmod(p, 01777);
	snprintf(p, sizeof(p), "%s/open/x", base);
	ok(opens(p, why, sizeof(why)), "... with the sticky bit (like /tmp) it is crossed");
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/open/theirs", base);
		mkdir(p, 0755);
		if (chown(p, 65534, 65534) < 0)
			return 1;
		ok(!opens(p, why, sizeof(why)), "a directory owned by another user is refused");
		like(why, "owned by uid 65534, not root", "... saying so");
	} else {
		ok(1, "# SKIP the owner check needs root");
	}
	snprintf(p, sizeof(p), "%s/../x", base);
	ok(!opens(p, why, sizeof(why)), "'..' refused");
	ok(!opens("relative/dir", why, sizeof(why)), "a relative path refused");
	snprintf(p, sizeof(p), "rm -rf '%s'", base);
	if (system(p) != 0)
		return 1;
	return tap_done();
}
