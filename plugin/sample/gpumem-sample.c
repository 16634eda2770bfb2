/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpumem-sample: the per-job GPU memory profile.  Started by
 * root's job prolog (as nobody, in its own session, outside the job's
 * cgroup) for the job's GPUs; stopped by the job epilog with SIGTERM.  It
 * samples NVML every interval and keeps bounded statistics per GPU and
 * metric (sample_stats.c); its output is one gpumem-profile/1 document on
 * stdout (sample_doc.c), rewritten in place every --flush-s seconds when
 * stdout is a regular file, so a sampler killed outright leaves a recent
 * profile.
 *
 * Timing: a timerfd with an absolute first expiry and a fixed period on
 * CLOCK_MONOTONIC (the absolute-deadline sleep of clock_nanosleep, without
 * drift), and the stop signals through a signalfd, both in one poll():
 * no window where a signal arrives between a flag test and the sleep, so
 * SIGTERM ends an hour-long interval at once.  Root's side starts it with
 * those signals already blocked (sampler.c), so a SIGTERM sent while it
 * starts waits for the signalfd and still gets a document.  Rounds that a slow NVML
 * call made the sampler miss are skipped (the timeline keeps time).
 * Nothing is allocated per sample; the document is built only at a flush.
 *
 * Exit: 0 with a document written (also "skipped": no NVML, no GPU), 64
 * usage, 1 when stdout could not be written.
 * Builds: plugin/sample/sample.am.  Includes plugin/core's json.h, nvmldl.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "sample_doc.h"

#define EXIT_USAGE 64
#define INTERVAL_MIN_MS 100             /* GPM's own refresh: no shorter */
#define INTERVAL_MAX_MS 3600000
#define FLUSH_MAX_S 86400

struct opts {
	struct sample_want want;
	long interval_ms, flush_s;
};

/*
 * Where the document goes: written once at the end (a pipe, a terminal),
 * or, on a regular file, rewritten in place from where stdout stood when
 * the sampler started (0 for "> file"; what a shared log held before it is
 * left alone), the file offset left after it.
 */
struct out {
	int inplace;
	off_t base;
	size_t last;            /* bytes of the document there now */
};

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpumem: sample: %s\n", msg);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpumem-sample [--gpus LIST] [--interval-ms N] [--flush-s N]\n"
		"Samples the GPUs' memory bandwidth, SM use, PCIe and NVLink traffic and\n"
		"memory used (NVML) until SIGTERM, then writes one gpumem-profile/1 JSON\n"
		"document on stdout.\n"
		"  --gpus LIST       NVML indices or GPU-... UUIDs, comma-separated (default: all)\n"
		"  --interval-ms N   %d..%d, default 1000\n"
		"  --flush-s N       rewrite the document every N s when stdout is a file\n"
		"                    (default 30, 0: only at the end)\n",
		INTERVAL_MIN_MS, INTERVAL_MAX_MS);
}

/* S as a whole decimal number in LO..HI: 0 and *out, or -1. */
static int number(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Is T a GPU UUID as NVML writes it (GPU-, then hex digits and dashes)? */
static int is_uuid(const char *t, size_t len)
{
	if (len <= 4 || len >= GPUMEM_NVML_BUFFER_SIZE || strncmp(t, "GPU-", 4) != 0)
		return 0;
	return strspn(t + 4, "0123456789abcdefABCDEF-") >= len - 4;
}

/* One entry of --gpus (T, LEN bytes) into W: 0, or -1 with the complaint said. */
static int gpus_item(struct sample_want *w, const char *t, size_t len)
{
	char tok[GPUMEM_NVML_BUFFER_SIZE];
	long idx;

	if (w->n == SAMPLE_MAX_GPUS) {
		say("--gpus: more than %d GPUs", SAMPLE_MAX_GPUS);
		return -1;
	}
	if (len >= sizeof(tok)) {
		say("--gpus: '%.16s...' is neither a GPU index nor a GPU-... UUID", t);
		return -1;
	}
	memcpy(tok, t, len);
	tok[len] = '\0';
	if (is_uuid(tok, len)) {
		for (size_t i = 0; i < w->n; i++)
			if (strcasecmp(w->item[i].uuid, tok) == 0) {
				say("--gpus: %s is listed twice", tok);
				return -1;
			}
		w->item[w->n].index = -1;
		memcpy(w->item[w->n++].uuid, tok, len + 1);
		return 0;
	}
	if (len > 4 || number(tok, 0, 9999, &idx) < 0) {
		say("--gpus: '%s' is neither a GPU index nor a GPU-... UUID", tok);
		return -1;
	}
	for (size_t i = 0; i < w->n; i++)
		if (w->item[i].index == idx) {
			say("--gpus: GPU %ld is listed twice", idx);
			return -1;
		}
	w->item[w->n].uuid[0] = '\0';
	w->item[w->n++].index = (int)idx;
	return 0;
}

static int parse_gpus(struct sample_want *w, const char *arg)
{
	const char *p = arg, *c;

	w->n = 0;
	for (;;) {
		c = strchr(p, ',');
		if (gpus_item(w, p, c ? (size_t)(c - p) : strlen(p)) < 0)
			return -1;
		if (c == NULL)
			return 0;
		p = c + 1;
	}
}

/* 0: run; 1: --help done; -1: usage error (said). */
static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "gpus", required_argument, 0, 'g' }, { "interval-ms", required_argument, 0, 'i' },
		{ "flush-s", required_argument, 0, 'f' }, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int c;

	o->want.n = 0;
	o->interval_ms = 1000;
	o->flush_s = 30;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (parse_gpus(&o->want, optarg) < 0)
				return -1;
			break;
		case 'i':
			if (number(optarg, INTERVAL_MIN_MS, INTERVAL_MAX_MS, &o->interval_ms) < 0) {
				say("--interval-ms: '%.20s' is not a number of milliseconds in %d..%d",
				    optarg, INTERVAL_MIN_MS, INTERVAL_MAX_MS);
				return -1;
			}
			break;
		case 'f':
			if (number(optarg, 0, FLUSH_MAX_S, &o->flush_s) < 0) {
				say("--flush-s: '%.20s' is not a number of seconds in 0..%d", optarg,
				    FLUSH_MAX_S);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			say("%s needs an argument", argv[optind - 1]);
			return -1;
		default:
			say("unknown option '%.40s'", argv[optind - 1]);
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		say("unexpected argument '%.40s'", argv[optind]);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ output */
static void out_init(struct out *o)
{
	struct stat st;
	int fl;

	o->last = 0;
	o->inplace = fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
		     (fl = fcntl(STDOUT_FILENO, F_GETFL)) >= 0;
	if (!o->inplace)
		return;
	/* pwrite appends where O_APPEND is set: start at the end, and clear it. */
	o->base = lseek(STDOUT_FILENO, 0, (fl & O_APPEND) ? SEEK_END : SEEK_CUR);
	if (o->base < 0 || ((fl & O_APPEND) && fcntl(STDOUT_FILENO, F_SETFL, fl & ~O_APPEND) < 0) ||
	    ftruncate(STDOUT_FILENO, o->base) < 0)
		o->inplace = 0;
}

static int write_all(const char *buf, size_t len, off_t at, int positioned)
{
	ssize_t w;

	while (len > 0) {
		w = positioned ? pwrite(STDOUT_FILENO, buf, len, at) : write(STDOUT_FILENO, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		at += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Rewrite the document in place.  A shorter document is padded with blanks
 * (JSON whitespace) over the old one's bytes, then the file is cut to it:
 * killed between the two, the file still holds one valid document.
 */
static int put_inplace(struct out *o, char **doc, size_t len)
{
	size_t n = len;
	char *p;

	if (len < o->last) {
		p = realloc(*doc, o->last);
		if (p == NULL)
			return -1;
		*doc = p;
		memset(p + len, ' ', o->last - len);
		n = o->last;
	}
	if (write_all(*doc, n, o->base, 1) < 0 ||
	    ftruncate(STDOUT_FILENO, o->base + (off_t)len) < 0)
		return -1;
	o->last = len;
	lseek(STDOUT_FILENO, o->base + (off_t)len, SEEK_SET);
	return 0;
}

/* R's document to stdout: 0, or -1 (errno set). */
static int put(struct out *o, const struct sample_run *r)
{
	struct json_object *d = sample_doc(r);
	char *s = d ? gpumem_json_dump(d, GPUMEM_JSON_COMPACT) : NULL;
	int rv = -1;

	json_object_put(d);
	if (s == NULL) {
		errno = ENOMEM;
		return -1;
	}
	rv = o->inplace ? put_inplace(o, &s, strlen(s)) : write_all(s, strlen(s), 0, 0);
	free(s);
	return rv;
}

/* ------------------------------------------------------------ the run */
struct loop {
	int sfd, tfd;
	struct timespec t0;
	time_t next_flush;              /* CLOCK_MONOTONIC seconds; 0: never */
};

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Seconds sampled since T0 (0 without: skipped) and the CPU time used so far. */
static void times_now(struct sample_run *r, const struct timespec *t0)
{
	struct rusage ru;

	r->seconds = t0 ? since(t0) : 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		r->cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void started_now(struct sample_run *r)
{
	time_t now = time(NULL);
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(r->started, sizeof(r->started), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(r->started, sizeof(r->started), "1970-01-01T00:00:00Z");
}

/* SIGTERM, SIGINT and SIGHUP blocked and readable on a signalfd: -1 on error. */
static int stop_signals(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* A timer expiring every INTERVAL_MS from T0 (absolute), or -1. */
static int ticker(const struct timespec *t0, long interval_ms)
{
	struct itimerspec its = { 0 };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	if (fd < 0)
		return -1;
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = interval_ms % 1000 * 1000000L;
	its.it_value.tv_sec = t0->tv_sec + its.it_interval.tv_sec;
	its.it_value.tv_nsec = t0->tv_nsec + its.it_interval.tv_nsec;
	if (its.it_value.tv_nsec >= 1000000000L) {
		its.it_value.tv_sec++;
		its.it_value.tv_nsec -= 1000000000L;
	}
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Wait for the next round: the number of timer periods gone by since the
 * last (more than 1 when rounds were missed), or 0 on a stop signal.
 */
static uint64_t next_round(const struct loop *l)
{
	struct pollfd p[2] = { { .fd = l->sfd, .events = POLLIN }, { .fd = l->tfd, .events = POLLIN } };
	uint64_t n;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 0;
		if (p[0].revents)
			return 0;
		if ((p[1].revents & POLLIN) && read(l->tfd, &n, sizeof(n)) == (ssize_t)sizeof(n) && n)
			return n;
	}
}

/* Sample G until a stop signal, rewriting the document every flush_s. */
static void sample(struct loop *l, struct sample_nvml *n, struct sample_gpu *g,
		   struct sample_run *r, struct out *o, const struct opts *opt)
{
	unsigned long long ticks = 0;
	struct timespec now;
	uint64_t k;

	while ((k = next_round(l)) != 0) {
		ticks += k;
		for (size_t i = 0; i < r->ngpus; i++)
			sample_nvml_round(n, &g[i], ticks - 1);
		if (!l->next_flush)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec < l->next_flush)
			continue;
		l->next_flush = now.tv_sec + opt->flush_s;
		times_now(r, &l->t0);
		if (put(o, r) < 0)
			say("cannot rewrite the document on stdout: %s", strerror(errno));
	}
}

/*
 * Standard input and error open (on /dev/null where they were closed), so
 * that no file NVML opens takes their numbers; a closed stdout has nowhere
 * for the document to go: -1.
 */
static int std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		if (fd == STDOUT_FILENO || open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
			return -1;
	}
	return 0;
}

/*
 * NVML, the GPUs and the timer, ready to sample: NULL, or why not (in WHY).
 * The sampling clock starts here: l->t0, the timer's first expiry one
 * interval later.
 */
static const char *prepare(struct sample_nvml *n, const struct opts *opt, struct loop *l,
			   struct sample_gpu **gpus, size_t *ngpus, char *why, size_t len)
{
	if (l->sfd < 0) {
		snprintf(why, len, "cannot wait for signals: %s", strerror(errno));
		return why;
	}
	if (sample_nvml_open(n, why, len) < 0 ||
	    sample_nvml_select(n, &opt->want, gpus, ngpus, why, len) < 0)
		return why;
	clock_gettime(CLOCK_MONOTONIC, &l->t0);
	l->tfd = ticker(&l->t0, opt->interval_ms);
	if (l->tfd < 0) {
		snprintf(why, len, "cannot start a timer: %s", strerror(errno));
		return why;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char why[SAMPLE_REASON_MAX];
	struct sample_run r = { 0 };
	struct sample_nvml n = { 0 };
	struct sample_gpu *gpus = NULL;
	size_t ngpus = 0;
	struct loop l = { .sfd = -1, .tfd = -1 };
	struct opts opt;
	struct out o;
	int rc;

	if (std_fds() < 0) {
		say("stdout is closed: nowhere to write the document");
		return 1;
	}
	rc = parse(argc, argv, &opt);
	if (rc != 0)
		return rc > 0 ? 0 : EXIT_USAGE;
	l.sfd = stop_signals();
	out_init(&o);
	r.interval_ms = opt.interval_ms;
	started_now(&r);
	r.reason = prepare(&n, &opt, &l, &gpus, &ngpus, why, sizeof(why));
	if (r.reason) {
		say("skipped: %s", r.reason);
	} else {
		r.gpus = gpus;
		r.ngpus = ngpus;
		l.next_flush = opt.flush_s && o.inplace ? l.t0.tv_sec + opt.flush_s : 0;
		if (l.next_flush && put(&o, &r) < 0)
			say("cannot write the document on stdout: %s", strerror(errno));
		sample(&l, &n, gpus, &r, &o, &opt);
	}
	times_now(&r, r.reason ? NULL : &l.t0);
	rc = put(&o, &r) < 0 ? 1 : 0;
	if (rc)
		say("cannot write the document on stdout: %s", strerror(errno));
	sample_nvml_close(&n, gpus, ngpus);
	free(gpus);
	return rc;
}
