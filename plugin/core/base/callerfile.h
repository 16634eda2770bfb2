/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files a command opens on its caller's word, where the caller may be
 * root and every path a user could have planted a link in (callerfile.c):
 * the CLI's output files (written whole beside their place, renamed into
 * it, a link refused), the report files it is told to read (never through
 * a link; as root, with the rights of the directory's owner), and the
 * caller's own cache directory ($XDG_CACHE_HOME/gpumem, else
 * ~/.cache/gpumem: made and opened without following a link, only as the
 * real uid, only where that uid owns it).
 */
#ifndef GPUMEM_CALLERFILE_H
#define GPUMEM_CALLERFILE_H
#include <stdio.h>
#include <sys/types.h>

/*
 * Directory PATH (absolute or relative): as root, every component opened
 * with O_NOFOLLOW (a symbolic link anywhere is refused: a user could have
 * planted it); as anyone else, opened as given (they reach only what they
 * may).  An O_DIRECTORY descriptor, or -1 with the reason in WHY.
 */
int gpumem_caller_dir_open(const char *path, char *why, size_t whylen);

/* An output file being written (gpumem_out_open .. gpumem_out_commit). */
struct gpumem_out {
	FILE *f;                /* write here */
	int dfd;                /* its directory, -1 for stdout */
	char name[256];         /* its last component */
	char tmp[300];          /* the temporary file beside it */
};

/*
 * OUT ("-": stdout) for writing: a temporary file made with O_EXCL and
 * O_NOFOLLOW in OUT's directory (gpumem_caller_dir_open), renamed over
 * OUT by gpumem_out_commit.  OUT itself may not be a symbolic link, nor
 * anything but a regular file: nothing is ever written through a link.
 * 0, or -1 with the reason in WHY (nothing made).
 */
int gpumem_out_open(struct gpumem_out *o, const char *path, char *why, size_t whylen);
/*
 * Close, and rename into place when the file was written whole and KEEP
 * (0: the caller failed, the temporary file is removed).  0, or -1 (WHY;
 * no file left).
 */
int gpumem_out_commit(struct gpumem_out *o, int keep, char *why, size_t whylen);

/* The identity a root process reads a user's directory with (gpumem_fs_as_owner). */
struct gpumem_fs_ids {
	int switched;
	int ngroups;
	gid_t groups[256];
};

/*
 * As root, when directory DFD is not root's: take its owner's uid and
 * primary gid, no supplementary groups, for file access (setfsuid,
 * setfsgid) until gpumem_fs_restore, so what is read in it is what its
 * owner could read.  Nothing for anyone else.  0, or -1 (WHY).
 */
int gpumem_fs_as_owner(int dfd, struct gpumem_fs_ids *s, char *why, size_t whylen);
void gpumem_fs_restore(struct gpumem_fs_ids *s);

/*
 * File PATH the caller named, to read (O_NONBLOCK: the reader checks what
 * kind of file it is): never through a link at its last component; as
 * root, none anywhere in its directory's path, and opened with that
 * directory's owner's rights (gpumem_fs_as_owner).  A descriptor, or -1
 * with the reason in WHY (never the file's content).
 */
int gpumem_caller_file_open(const char *path, char *why, size_t whylen);

/*
 * The caller's cache directory, as its real uid only (real and effective
 * the same): $XDG_CACHE_HOME/gpumem, else $HOME/.cache/gpumem.  $HOME
 * must exist and be the uid's; $XDG_CACHE_HOME, .cache and gpumem are
 * each made 0700 when missing (mkdirat) and opened with O_NOFOLLOW from
 * their parent's descriptor, and must be the uid's and writable by no one
 * else.  A descriptor, or -1 with WHY.
 */
int gpumem_cache_dir_open(char *why, size_t whylen);
#endif
