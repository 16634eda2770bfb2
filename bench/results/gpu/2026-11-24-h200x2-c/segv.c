/* LD_PRELOAD helper for a GPU run: print a backtrace on SIGSEGV. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/syscall.h>
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	void *bt[64];
	char msg[128];
	int n = backtrace(bt, 64);
	(void)uc;
	snprintf(msg, sizeof msg, "SEGV sig %d addr %p tid %ld\n", sig, si->si_addr, (long)syscall(SYS_gettid));
	if (write(2, msg, strlen(msg)) < 0)
		_exit(139);
	backtrace_symbols_fd(bt, n, 2);
	_exit(139);
}
__attribute__((constructor)) static void init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}
