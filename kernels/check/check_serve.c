/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-check --serve: the warm check server (doc/admin/checks.md, "The warm
 * check server").  A fresh check pays the driver's start (cuInit: 0.56 s
 * on 4x H200, growing with each visible GPU) and the teardown of its
 * contexts at exit (0.21 s) on the node's time; the server pays cuInit
 * once, answers each check as soon as its document is written, and only
 * then resets the GPUs it used, with no one waiting.
 *
 * The job prolog/epilog (root, plugin/spank/check/checkserve.c) starts it as
 * check_user, in a session of its own, with a fixed environment and the
 * node's listening socket (root's, 0600, state_dir/check.<HOST>.sock) on
 * standard input; it never makes a file.  Every GPU of the node is
 * visible to it; a request names the job's GPUs as the plugin would set
 * CUDA_VISIBLE_DEVICES, and the check numbers them as that list would, so
 * its document is the one a fresh `CUDA_VISIBLE_DEVICES=LIST gpumem-check`
 * prints.  It also answers the NVML health request (checkwire.h) with the
 * gpumem-health/1 document gpumem-health would print, from the same code
 * (plugin/core/health/health_doc.c), NVML started once (by the first check or
 * health request, one NVML for both) and kept: the prolog and epilog then pay no nvmlInit for the
 * evidence a reused check rests on (doc/admin/checks.md, "Reuse").  One request
 * per connection, served one at a time (a second prolog waits in the
 * listen queue: the driver serializes context creation anyway).  A peer other than root is refused; a request that
 * does not decode (plugin/core/health/checkwire.c) gets no check.
 *
 * Where the driver will not start with every GPU visible, it serves
 * nothing (each check then runs one-shot, on the job's GPUs alone).
 * It ends after --idle S seconds without a request, after a check whose
 * verdict is neither pass nor skipped (a GPU error may leave CUDA's state
 * poisoned: the next check starts fresh), once its executable is replaced
 * (a package upgrade: the caller waiting for its hello then runs the new
 * one-shot check), on SIGTERM (after the check in hand), and at a
 * check's --timeout (SIGALRM: the caller sees no reply, counted as a check
 * that did not finish).  No step hangs for ever: its start (cuInit) and
 * every request (the request's read, the NVML health read, the reply, the
 * reset of the GPUs a check used) are under an alarm too (START_ALARM_S,
 * SERVE_ALARM_S), which ends the process: stuck in the driver, it would
 * keep the node's hooks waiting; the next hook starts a fresh server.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "core_health.h"
#include "core_policy.h"
#include "core_base.h"

#define PFX GPUMEM_CHECK_PFX
#define LISTEN_FD 0
#define REQUEST_MS 10000        /* a request must arrive whole within this */
/*
 * A stage of the server that is not a check (a request and its NVML health
 * read, a reply and the reset of a check's GPUs) ends the process past
 * this: each takes milliseconds to seconds; its start (cuInit with every
 * GPU visible: seconds on a big node without persistence mode) past
 * START_ALARM_S.
 */
#define SERVE_ALARM_S 30
#define START_ALARM_S 120

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_alarm(int sig)
{
	static const char msg[] = PFX "serve: a request or the driver hung past the "
		"server's alarm: ending\n";
	ssize_t w;

	(void)sig;
	w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	_exit(GPUMEM_CHECK_EXIT_FAIL);
}

/* Arm the server's own alarm for the stage that follows (never over a check). */
static void serve_alarm(unsigned int seconds)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* /proc/self/exe deleted or replaced: a package upgrade; the next check must start the new one. */
static int exe_replaced(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return n > 10 && !strcmp(buf + n - 10, " (deleted)");
}

/* LEN bytes from FD before DEADLINE (CLOCK_MONOTONIC ms); 0, or -1. */
static int read_full(int fd, unsigned char *buf, size_t len, long deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t off = 0;

	while (off < len) {
		long left = deadline - gpumem_mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			if (left > 0 && errno == EINTR && !stop)
				continue;
			return -1;
		}
		n = read(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The connection's peer is root (the job prolog/epilog), by the kernel's word. */
static int peer_is_root(int fd)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) == 0 && uc.uid == 0;
}

/*
 * Read and decode one request from FD: a check's into REQ, or a health
 * request's GPUs into GPUS.  Its kind (GPUMEM_CW_KIND_*), or -1 (said on
 * stderr).
 */
static int request_read(int fd, struct gpumem_cw_req *req, char *gpus)
{
	unsigned char head[GPUMEM_CW_HEAD], *buf = NULL;
	long deadline = gpumem_mono_ms() + REQUEST_MS, body;
	char why[256] = "no whole request in time";
	int kind = 0, rv = -1;

	if (read_full(fd, head, sizeof(head), deadline) < 0)
		goto fail;
	kind = gpumem_cw_kind(head);
	body = kind == GPUMEM_CW_KIND_HEALTH ? gpumem_cw_health_head(head, why, sizeof(why)) :
		gpumem_cw_req_head(head, why, sizeof(why));
	if (body < 0 || !(buf = malloc(GPUMEM_CW_HEAD + (size_t)body)))
		goto fail;
	memcpy(buf, head, sizeof(head));
	snprintf(why, sizeof(why), "no whole request in time");
	if (read_full(fd, buf + GPUMEM_CW_HEAD, (size_t)body, deadline) < 0)
		goto fail;
	if (kind == GPUMEM_CW_KIND_HEALTH)
		rv = gpumem_cw_health_decode(buf, GPUMEM_CW_HEAD + (size_t)body, gpus, why, sizeof(why));
	else
		rv = gpumem_cw_req_decode(buf, GPUMEM_CW_HEAD + (size_t)body, req, why, sizeof(why));
fail:
	if (rv < 0)
		fprintf(stderr, PFX "serve: request refused: %s\n", why);
	free(buf);
	return rv < 0 ? -1 : kind;
}

/*
 * A health request for GPUS: the gpumem-health/1 document, from the code
 * gpumem-health runs (plugin/core/health/health_doc.c), over the process's one
 * NVML (gpumem_health_shared: started by the first check or health
 * request, kept, and shared with the checks).  The server's own pid is left out of
 * "node_held": it holds no context here (each check's contexts are reset
 * before the next request is accepted), and must not stop the epilog's
 * skipped L2 reset if a driver kept one; every other process counts.
 */
static void serve_health(int fd, const char *gpus)
{
	struct gpumem_health_nvml *nvml;
	char driver[96], note[300];
	int missing;
	unsigned char head[GPUMEM_CW_HEAD];
	struct timespec t0;
	size_t len;
	char *doc;
	int code;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	nvml = gpumem_health_shared(driver, sizeof(driver), note, sizeof(note), &missing);
	gpumem_health_ignore_pid(nvml, (unsigned int)getpid());
	doc = gpumem_health_document(nvml, driver, note, missing, gpus, &t0, &code);
	len = doc ? strlen(doc) : 0;
	if (!doc || len > GPUMEM_CW_HEALTH_DOC_MAX) {
		free(doc);
		return;         /* no reply: the caller runs gpumem-health */
	}
	gpumem_cw_health_reply_head(head, code, len);
	if (write_full(fd, head, sizeof(head)) < 0 || write_full(fd, doc, len) < 0)
		fprintf(stderr, PFX "serve: the caller left before the health reply\n");
	free(doc);
}

/* The request's GPU list (validated: plain indices) as CUDA ordinals. */
static void request_ordinals(const struct gpumem_cw_req *req, struct gpumem_check_io *io)
{
	const char *p = req->gpus;

	io->nord = 0;
	while (*p && io->nord < GPUMEM_CHECK_MAX_DEVICES) {
		io->ordinals[io->nord++] = (int)strtol(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
}

/*
 * One request on FD: decode, check (or read the NVML health), reply (exit
 * code, document).  The check's exit code, or -1 when there was none to run.
 */
static int serve_one(int fd, struct gpumem_check_io *io)
{
	struct gpumem_cw_req req;
	char tmo[16], *argv[16], *doc = NULL, gpus[GPUMEM_CW_GPUS_MAX + 1];
	unsigned char head[GPUMEM_CW_HEAD];
	size_t doc_len = 0;
	int argc = 0, rc, kind;

	io->nused = 0;
	gpumem_cw_hello(head);
	if (write_full(fd, head, GPUMEM_CW_HELLO) < 0 ||
	    (kind = request_read(fd, &req, gpus)) < 0)
		return -1;
	if (kind == GPUMEM_CW_KIND_HEALTH) {
		serve_health(fd, gpus);
		return -1;      /* no check ran */
	}
	snprintf(tmo, sizeof(tmo), "%d", req.timeout_s);
	argv[argc++] = GPUMEM_CHECK_PROG;
	argv[argc++] = "--json";
	argv[argc++] = "-";
	argv[argc++] = "--min-fraction";
	argv[argc++] = req.frac;
	argv[argc++] = "--timeout";
	argv[argc++] = tmo;
	if (req.flags & GPUMEM_CW_SITE) {
		argv[argc++] = "--site";
		argv[argc++] = "-";
	}
	if (req.flags & GPUMEM_CW_L2AB)
		argv[argc++] = "--l2-ab";
	if (req.flags & GPUMEM_CW_SETASIDE) {
		argv[argc++] = "--l2-setaside";
		argv[argc++] = req.setaside;
	}
	if (req.flags & GPUMEM_CW_L2RESET)
		argv[argc++] = "--l2-reset";
	argv[argc] = NULL;
	io->site_text = req.site ? req.site : "";
	io->site_len = req.site_len;
	request_ordinals(&req, io);
	setenv(GPUMEM_ENV_NODENAME, req.node, 1);
	io->json_out = open_memstream(&doc, &doc_len);
	if (!io->json_out) {
		gpumem_cw_req_free(&req);
		return -1;
	}
	alarm(0);               /* the check runs under its own --timeout alone, as one-shot */
	rc = gpumem_check_run_one(argc, argv, io);
	serve_alarm(SERVE_ALARM_S); /* the reply, then the GPUs' reset (teardown) */
	if (fclose(io->json_out) != 0 || doc_len > GPUMEM_CW_DOC_MAX) {
		doc_len = 0;
		rc = GPUMEM_CHECK_EXIT_FAIL;
	}
	gpumem_cw_reply_head(head, rc, doc_len);
	if (write_full(fd, head, sizeof(head)) < 0 || write_full(fd, doc, doc_len) < 0)
		fprintf(stderr, PFX "serve: the caller left before the reply\n");
	free(doc);
	gpumem_cw_req_free(&req);
	return rc;
}

/* After the reply: end the contexts the check made, with no one waiting. */
static void teardown(const struct gpumem_check_io *io)
{
	for (int i = 0; i < io->nused; i++)
		if (cudaSetDevice(io->used[i]) == cudaSuccess)
			cudaDeviceReset();
}

static int serve_args(int argc, char **argv, int *idle_s)
{
	char *end;
	long v;

	if (argc == 4 && !strcmp(argv[2], "--idle")) {
		errno = 0;
		v = strtol(argv[3], &end, 10);
		if (*argv[3] && !*end && !errno && v >= 1 && v <= 7 * 86400) {
			*idle_s = (int)v;
			return 0;
		}
	}
	fprintf(stderr, PFX "usage: " GPUMEM_CHECK_PROG " --serve --idle SECONDS (1..604800), "
		"a listening unix socket on standard input\n");
	return -1;
}

int gpumem_check_serve(int argc, char **argv)
{
	struct gpumem_check_io io = { .nord = -1 };
	struct gpumem_check_report rep;
	struct sigaction sa;
	char why[GPUMEM_CHECK_MSG];
	int idle_s, on = 0, n = 0, r0;
	socklen_t l = sizeof(on);

	if (serve_args(argc, argv, &idle_s) < 0)
		return GPUMEM_CHECK_EXIT_USAGE;
	if (getsockopt(LISTEN_FD, SOL_SOCKET, SO_ACCEPTCONN, &on, &l) < 0 || !on) {
		fprintf(stderr, PFX "--serve: standard input is not a listening socket\n");
		return GPUMEM_CHECK_EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Before cuInit, as each check sets it (one work queue per GPU). */
	setenv(GPUMEM_ENV_MAX_CONN, "1", 0);
	/* cuInit once, with every GPU of the node visible: what each request saves. */
	memset(&rep, 0, sizeof(rep));
	serve_alarm(START_ALARM_S);
	r0 = gpumem_check_probe(&rep, &n, why, sizeof(why));
	alarm(0);
	if (r0 != 0 && r0 != GPUMEM_CHECK_EXIT_SKIPPED) {
		/*
		 * The driver will not start with every GPU visible (one GPU off
		 * the bus, an MPS daemon in the way): serve nothing, so that each
		 * check runs one-shot on the job's GPUs alone, as without a server.
		 */
		fprintf(stderr, PFX "serve: not serving: %s\n", why);
		return GPUMEM_CHECK_EXIT_UNUSABLE;
	}
	for (;;) {
		struct pollfd p = { .fd = LISTEN_FD, .events = POLLIN };
		int fd, rc, r;

		if (stop || exe_replaced())
			break;
		r = poll(&p, 1, idle_s * 1000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || exe_replaced())
			break;          /* idle, the socket gone, or upgraded: the caller starts the new one */
		fd = accept4(LISTEN_FD, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!peer_is_root(fd)) {
			fprintf(stderr, PFX "serve: a peer other than root refused\n");
			close(fd);
			continue;
		}
		serve_alarm(SERVE_ALARM_S); /* the request, and the NVML health read */
		rc = serve_one(fd, &io);
		close(fd);
		teardown(&io);
		alarm(0);
		if (rc > 0 && rc != GPUMEM_CHECK_EXIT_SKIPPED && rc != GPUMEM_CHECK_EXIT_USAGE)
			break;          /* not a pass: the next check starts in a fresh process */
	}
	fflush(NULL);
	return 0;
}
