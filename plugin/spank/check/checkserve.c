/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job prolog's and epilog's side of the warm check server (site key
 * check.warm, doc/admin/checks.md "The warm check server"): a check of the job's
 * GPUs asked of a running `gpumem-check --serve` instead of a fresh
 * process, which pays the driver's start (cuInit) and the teardown of its
 * contexts on the node's time.
 *
 * Root owns the rendezvous: state_dir/check.<HOST>.sock (statefiles.h),
 * made, bound (0600) and listened here under state_dir/check.<HOST>.lock,
 * and handed to the server on its stdin; the server runs as check_user,
 * with no groups, in a session of its own (gpumem_proc_spawn, like
 * the sampler and the MPS daemon), from "/", with a fixed environment
 * (PATH, root's empty nomps as its MPS pipe directory, one work queue per
 * GPU), never the job's.  Who serves is checked by the kernel's word
 * before the request is sent: the server's hello carries its writer's
 * credentials (SO_PASSCRED; the socket's own SO_PEERCRED would name root,
 * who listened): check_user, or it is not asked.
 *
 * It also answers the NVML health a reuse rests on (gpumem_checkserve_health,
 * for plugin/spank/check/evidence.c): the same connection, hello and credentials,
 * a health request; no answer in time, one that does not decode, or a
 * server that does not know the request (an older one answers nothing) is
 * no evidence from it, and the caller runs gpumem-health as without a
 * server (one log line).  A health request starts a server where none
 * runs, but does not wait for its cuInit: the next job's finds it up.
 *
 * A server that cannot be reached or started is no verdict: the caller
 * runs the one-shot check, and the log says so in one line.  No wait here
 * is unbounded, so that a server stuck in the driver (or stopped) never
 * holds a node: connect() never waits (a full listen queue is "not
 * asked" at once); a running server's hello is awaited CHECK_HELLO_MS
 * (HEALTH_HELLO_MS for a health request), a fresh one's START_WAIT_MS
 * (its cuInit) by the hook that started it alone; each wait within the
 * hook's own deadline.  A server that misses its hello GPUMEM_CS_MISSES
 * times in a row, while no hook is being served, is ended and replaced
 * (checkwatch.c).  A server that was asked and gave no whole reply in
 * time is a check that did not finish (counted as failed), like a
 * one-shot check that was killed.
 * When gpumem drains the node, the server is stopped (gpumem_checkserve_stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "checkwatch.h"
#include "checkserve.h"
#include "core_health.h"
#include "core_policy.h"
#include "log.h"
#include "core_base.h"
#include "nodegpus.h"
#include "statefiles.h"

#define LOCK_WAIT_MS 5000
#define START_WAIT_MS 10000     /* a fresh server's cuInit: seconds on a big node */
/*
 * A running server's hello for a check: it comes at once from an idle
 * server; a busy one (another job's check) or a stuck one costs the hook
 * this long, and the check then runs one-shot.
 */
#define CHECK_HELLO_MS 2000
/*
 * A health request waits this long for the hello (a server busy with
 * another job's check, or a fresh one in its cuInit: gpumem-health, 0.1 s,
 * is then sooner), and this long for the reply (NVML's reads, milliseconds).
 */
#define HEALTH_HELLO_MS 1000
#define HEALTH_REPLY_MS 5000

/* state_dir/check.<HOST>.KIND into ADDR (or PATH); 0, or -1 when it does not fit. */
static int sock_addr(const struct gpumem_check_ctx *c, struct sockaddr_un *addr)
{
	char name[128];
	int n;

	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (gpumem_sf_check(name, sizeof(name), GPUMEM_SF_CHECK_SOCK) < 0)
		return -1;
	n = snprintf(addr->sun_path, sizeof(addr->sun_path), "%s/%s", c->state.dir, name);
	return n > 0 && (size_t)n < sizeof(addr->sun_path) ? 0 : -1;
}

/*
 * A socket connected to the server, or -1 with errno.  Non-blocking: a
 * unix socket connects at once or not at all (EAGAIN: the listen queue is
 * full), so a server that accepts no one costs nothing here; the socket
 * stays non-blocking (send_all and recv_all poll, within their deadline).
 */
static int server_connect(const struct sockaddr_un *addr)
{
	int on = 1, e, fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	/* The kernel then tells who wrote each reply (check_reply_sender). */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		e = errno == EINPROGRESS ? EAGAIN : errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Set WHY for a full listen queue (errno EAGAIN after server_connect); 1 there, else 0. */
static int queue_full(char *why, size_t wlen)
{
	if (errno != EAGAIN)
		return 0;
	snprintf(why, wlen, "its listen queue is full: the server accepts no one");
	return 1;
}

/* A fresh listening socket at ADDR: root's, 0600 before anyone may connect. */
static int listen_new(const struct sockaddr_un *addr, char *why, size_t wlen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || (unlink(addr->sun_path) < 0 && errno != ENOENT) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    chmod(addr->sun_path, 0600) < 0 || listen(fd, 64) < 0) {
		snprintf(why, wlen, "cannot make %s: %s", addr->sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Start `CHECK --serve --idle S` as check_user on listening socket LFD; its pid or -1. */
static pid_t server_spawn(const struct gpumem_check_ctx *c, int lfd)
{
	char idle[32];
	char *argv[] = { (char *)c->as.check, "--serve", "--idle", idle, NULL };
	struct gpumem_henv env;
	struct gpumem_spawn sp = { .path = argv[0], .argv = argv, .uid = c->as.uid, .gid = c->as.gid,
				   .rgid = c->as.gid, .in = lfd, .out = -1, .err = -1 };

	snprintf(idle, sizeof(idle), "%d", c->check.warm_s);
	gpumem_henv_init(&env);
	gpumem_henv_set(&env, GPUMEM_ENV_MPS_PIPE, "%s", c->as.nomps);
	gpumem_henv_set(&env, GPUMEM_ENV_MAX_CONN, "1");
	sp.envp = gpumem_henv_envp(&env);
	return gpumem_proc_spawn(&sp);
}

/*
 * Connect to the node's server, starting one when none answers (under the
 * lock, so that two prologs start one; *FRESH then).  A connected socket,
 * or -1 with WHY (*FULL: the listen queue is full, a miss).
 */
static int server_reach(const struct gpumem_check_ctx *c, const struct sockaddr_un *addr,
			int *fresh, int *full, char *why, size_t wlen)
{
	int fd, lk, lfd;
	pid_t pid;

	*fresh = *full = 0;
	fd = server_connect(addr);
	if (fd >= 0 || (*full = queue_full(why, wlen)))
		return fd;
	lk = gpumem_cs_lock(c, LOCK_WAIT_MS, why, wlen);
	if (lk < 0)
		return -1;
	fd = server_connect(addr);      /* another hook may have started it meanwhile */
	if (fd >= 0 || (*full = queue_full(why, wlen)))
		goto out;
	lfd = listen_new(addr, why, wlen);
	if (lfd < 0)
		goto out;
	pid = server_spawn(c, lfd);
	close(lfd);
	if (pid < 0) {
		snprintf(why, wlen, "cannot fork: %s", strerror(errno));
		unlink(addr->sun_path);
		goto out;
	}
	gpumem_cs_started(c, pid, START_WAIT_MS);
	*fresh = 1;
	fd = server_connect(addr);      /* queued until the server accepts */
	if (fd < 0)
		snprintf(why, wlen, "cannot connect to %s: %s", addr->sun_path, strerror(errno));
out:
	close(lk);
	return fd;
}

static int send_all(int fd, const unsigned char *b, size_t len, long deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	while (len) {
		long left = deadline - gpumem_mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		n = send(fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * LEN bytes from FD before DEADLINE; with CRED, the credentials the kernel
 * attached to the first bytes (their writer's).  0, or -1.
 */
static int recv_all(int fd, unsigned char *b, size_t len, long deadline, struct ucred *cred)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char cbuf[CMSG_SPACE(sizeof(struct ucred))];
	int got = 0;

	while (len) {
		struct iovec iov = { .iov_base = b, .iov_len = len };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct cmsghdr *cm;
		long left = deadline - gpumem_mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		for (cm = CMSG_FIRSTHDR(&m); cred && cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS) {
				memcpy(cred, CMSG_DATA(cm), sizeof(*cred));
				got = 1;
			}
		if (cred && !got)
			return -1;      /* no credentials: nothing to trust */
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The server's hello on FD within WAIT_MS, before it is told anything: who
 * it is, by the kernel's word (*WHO): check_user's, or 0 is not returned.
 * 0, or -1 with WHY (*LATE: none came in time, a miss).
 */
static int server_hello(const struct gpumem_check_ctx *c, int fd, long wait_ms, struct ucred *who,
			int *late, char *why, size_t wlen)
{
	unsigned char hello[GPUMEM_CW_HELLO];
	long deadline = gpumem_mono_ms() + gpumem_proc_left_ms(wait_ms);

	*late = 0;
	if (recv_all(fd, hello, sizeof(hello), deadline, who) < 0 || !gpumem_cw_hello_ok(hello)) {
		*late = gpumem_mono_ms() >= deadline;
		if (*late)
			snprintf(why, wlen, "%s gave no hello within %ld ms: busy or stuck",
				 c->as.check, wait_ms);
		else
			snprintf(why, wlen, "%s gave no hello: not a warm check server",
				 c->as.check);
		return -1;
	}
	if (who->uid != c->as.uid) {
		snprintf(why, wlen, "the server is uid %u (pid %d), not check_user %u",
			 (unsigned)who->uid, (int)who->pid, (unsigned)c->as.uid);
		return -1;
	}
	return 0;
}

/* Can the job's GPUs be asked of the node's server, at ADDR?  0, or -1 with WHY. */
static int server_addr(const struct gpumem_check_ctx *c, struct sockaddr_un *addr, char *why,
		       size_t wlen)
{
	if (!gpumem_cw_gpus_ok(c->gpus.text)) {
		snprintf(why, wlen, "the job's GPUs are not plain indices ('%s')",
			 c->gpus.text[0] ? c->gpus.text : "all");
		return -1;
	}
	if (sock_addr(c, addr) < 0) {
		snprintf(why, wlen, "state_dir's path is too long for a socket");
		return -1;
	}
	return 0;
}

/*
 * The server that did not answer this hook (its job and hook): no hello
 * in time, its queue full, or no health reply in time.  The hook's check
 * then does not wait for it again: one stuck server costs a hook one
 * wait.  A job prolog or epilog is a process of its own (slurmstepd spank
 * prolog/epilog); the job and hook are kept in case one ever ran more.
 */
static struct {
	uint32_t job;
	char step[32];
	char why[300];
} unanswered;

static void note_unanswered(const struct gpumem_check_ctx *c, const char *why)
{
	unanswered.job = c->job.id;
	snprintf(unanswered.step, sizeof(unanswered.step), "%s", c->job.hook);
	snprintf(unanswered.why, sizeof(unanswered.why), "%s", why);
}

/* Did the server not answer this hook already?  1 with WHY, else 0. */
static int was_unanswered(const struct gpumem_check_ctx *c, char *why, size_t wlen)
{
	if (!unanswered.why[0] || unanswered.job != c->job.id || strcmp(unanswered.step, c->job.hook))
		return 0;
	snprintf(why, wlen, "it did not answer this hook's NVML health request: %.190s",
		 unanswered.why);
	return 1;
}

/* How long a request waits: for a running server's hello, a fresh one's, and its reply. */
struct waits {
	long hello_ms, fresh_ms, reply_ms;
};

/*
 * The server at ADDR, connected (started where none answers) and known by
 * its hello (*WHO), within W: the socket, or -1 with WHY (the caller then
 * does without it).  A full queue or a hello not in time is a miss
 * (checkwatch.c); a hello marks the server busy for W's reply.
 */
static int server_open(const struct gpumem_check_ctx *c, const struct sockaddr_un *addr,
		       const struct waits *w, struct ucred *who, char *why, size_t wlen)
{
	int fresh, full, late = 0, fd = server_reach(c, addr, &fresh, &full, why, wlen);

	if (fd >= 0 &&
	    server_hello(c, fd, fresh ? w->fresh_ms : w->hello_ms, who, &late, why, wlen) < 0) {
		close(fd);
		fd = -1;
	}
	if (full || late) {
		gpumem_cs_missed(c, why);
		note_unanswered(c, why);
	} else if (fd >= 0)
		gpumem_cs_serving(c, who->pid, w->reply_ms);
	return fd;
}

/* The request of this check: the options the one-shot check gets, the job's GPUs, the node. */
static int request(const struct gpumem_check_ctx *c, int timeout, int l2_reset,
		   unsigned char **buf, size_t *len, char *why, size_t wlen)
{
	struct gpumem_cw_req q = { 0 };

	q.timeout_s = timeout;
	snprintf(q.frac, sizeof(q.frac), "%g", c->check.min_fraction);
	snprintf(q.gpus, sizeof(q.gpus), "%s", c->gpus.text);
	snprintf(q.node, sizeof(q.node), "%s", c->node.name);
	if (c->check.site_text) {
		q.flags |= GPUMEM_CW_SITE;
		q.site = (char *)c->check.site_text;     /* only read by the encoder */
		q.site_len = strlen(c->check.site_text);
	}
	if (c->check.l2_ab)
		q.flags |= GPUMEM_CW_L2AB;
	if (c->check.l2_ab && c->check.l2_setaside[0]) {
		q.flags |= GPUMEM_CW_SETASIDE;
		snprintf(q.setaside, sizeof(q.setaside), "%s", c->check.l2_setaside);
	}
	if (l2_reset)
		q.flags |= GPUMEM_CW_L2RESET;
	return gpumem_cw_req_encode(&q, buf, len, why, wlen);
}

typedef int (*reply_parse_fn)(const unsigned char *head, int *code, size_t *doc_len, char *why,
			      size_t wlen);

/*
 * One request to the server PID on FD and its whole reply (head checked by
 * PARSE, then the document) before DEADLINE: the check's and the health's
 * exchange.  0 with *DOC (malloc'd, NUL-ended) and *CODE; -1 with why, WHAT
 * naming the reply ("reply", "health reply") and NOTE said where none came.
 */
static int exchange(int fd, pid_t pid, const unsigned char *req, size_t len, long deadline,
		    reply_parse_fn parse, int *code, char **doc, const char *what,
		    const char *note, char *why, size_t wlen)
{
	unsigned char head[GPUMEM_CW_HEAD];
	size_t doc_len;

	*doc = NULL;
	if (send_all(fd, req, len, deadline) < 0 ||
	    recv_all(fd, head, sizeof(head), deadline, NULL) < 0) {
		snprintf(why, wlen, "the warm check server pid %d gave no %s%s%s", (int)pid, what,
			 gpumem_mono_ms() >= deadline ? " in time" : "", note);
		return -1;
	}
	if (parse(head, code, &doc_len, why, wlen) < 0)
		return -1;
	*doc = malloc(doc_len + 1);
	if (!*doc || recv_all(fd, (unsigned char *)*doc, doc_len, deadline, NULL) < 0) {
		snprintf(why, wlen, "the warm check server pid %d broke off its %s", (int)pid, what);
		free(*doc);
		*doc = NULL;
		return -1;
	}
	(*doc)[doc_len] = '\0';
	return 0;
}

/*
 * Whether this node asks a warm server at all: check.warm on, and the node
 * has at least check.warm_min_gpus GPUs (a server's trade-offs, a held
 * device file that blocks a GPU reset, buy little on one GPU).  LOG: say
 * once, for a check, why a configured server is not used.
 */
static int warm_on(const struct gpumem_check_ctx *c, int log)
{
	int n;

	if (c->check.warm_s <= 0)
		return 0;
	if (c->check.warm_min_gpus <= 1)
		return 1;
	n = gpumem_node_gpus(c->node.nvidia_dev);
	if (n >= c->check.warm_min_gpus)
		return 1;
	if (log)
		gpumem_info("gpumem: job %u: check not asked of the warm server (this node has %d "
			    "GPU%s, check.warm_min_gpus is %d): one-shot", c->job.id, n, n == 1 ? "" : "s",
			    c->check.warm_min_gpus);
	return 0;
}

int gpumem_checkserve_run(const struct gpumem_check_ctx *c, int timeout, int l2_reset,
			  struct gpumem_proc *p, char *via, size_t vlen)
{
	unsigned char *req = NULL;
	struct sockaddr_un addr;
	struct ucred who = { 0 };
	char why[300] = "";
	/* A fresh one says hello after its cuInit. */
	struct waits w = { CHECK_HELLO_MS, START_WAIT_MS, 0 };
	size_t len;
	int fd = -1, rv = 0, code;

	if (!warm_on(c, 1))
		return 0;
	w.reply_ms = gpumem_proc_left_ms((timeout + 5) * 1000L);
	if (was_unanswered(c, why, sizeof(why)) || server_addr(c, &addr, why, sizeof(why)) < 0 ||
	    request(c, timeout, l2_reset, &req, &len, why, sizeof(why)) < 0 ||
	    (fd = server_open(c, &addr, &w, &who, why, sizeof(why))) < 0)
		goto out;
	/* From here the server was asked: no whole answer is a check that did not finish. */
	rv = -1;
	if (exchange(fd, who.pid, req, len, gpumem_mono_ms() + gpumem_proc_left_ms(w.reply_ms),
		     gpumem_cw_reply_parse, &code, &p->out, "reply", "", why, sizeof(why)) < 0)
		goto out;
	gpumem_cs_served(c);
	p->status = code;
	snprintf(via, vlen, "warm server pid %d", (int)who.pid);
	rv = 1;
out:
	if (rv == 0 && why[0])
		gpumem_info("gpumem: job %u: check not asked of the warm server (%s): one-shot",
			    c->job.id, why);
	else if (rv < 0)
		snprintf(via, vlen, "%s", why);
	if (fd >= 0)
		close(fd);
	free(req);
	return rv;
}

int gpumem_checkserve_health(const struct gpumem_check_ctx *c, char **doc, int *code)
{
	unsigned char *req = NULL;
	struct sockaddr_un addr;
	struct ucred who = { 0 };
	char why[300] = "";
	/* No wait for a fresh one's cuInit: gpumem-health is sooner. */
	const struct waits w = { HEALTH_HELLO_MS, HEALTH_HELLO_MS, HEALTH_REPLY_MS };
	size_t len;
	long deadline;
	int fd = -1, rv = 0;

	*doc = NULL;
	if (!warm_on(c, 0))
		return 0;
	if (server_addr(c, &addr, why, sizeof(why)) < 0 ||
	    gpumem_cw_health_encode(c->gpus.text, &req, &len, why, sizeof(why)) < 0 ||
	    (fd = server_open(c, &addr, &w, &who, why, sizeof(why))) < 0)
		goto out;
	deadline = gpumem_mono_ms() + gpumem_proc_left_ms(w.reply_ms);
	if (exchange(fd, who.pid, req, len, deadline, gpumem_cw_health_reply_parse, code, doc,
		     "health reply", " (one older than the request?)", why, sizeof(why)) < 0) {
		if (gpumem_mono_ms() >= deadline)
			note_unanswered(c, why);        /* stuck in the driver's health path */
		goto out;
	}
	gpumem_cs_served(c);
	gpumem_info("gpumem: job %u: NVML health served by the warm server pid %d", c->job.id,
		    (int)who.pid);
	rv = 1;
out:
	if (rv == 0 && why[0])
		gpumem_info("gpumem: job %u: NVML health not asked of the warm server (%s): "
			    "gpumem-health", c->job.id, why);
	if (fd >= 0)
		close(fd);
	free(req);
	return rv;
}

void gpumem_checkserve_stop(const struct gpumem_check_ctx *c)
{
	unsigned char hello[GPUMEM_CW_HELLO];
	struct sockaddr_un addr;
	struct ucred who = { 0 };
	int fd;

	if (c->check.warm_s <= 0 || sock_addr(c, &addr) < 0)
		return;
	fd = server_connect(&addr);
	if (fd < 0)
		return;
	/* Its pid by the kernel's word on its hello; only check_user's server is stopped. */
	if (recv_all(fd, hello, sizeof(hello), gpumem_mono_ms() + gpumem_proc_left_ms(2000), &who) == 0 &&
	    gpumem_cw_hello_ok(hello) && who.uid == c->as.uid && who.pid > 1 &&
	    kill(who.pid, SIGTERM) == 0)
		gpumem_info("gpumem: node %s drained: warm check server pid %d stopped", c->node.name,
			    (int)who.pid);
	close(fd);
}
