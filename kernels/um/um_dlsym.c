/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The dlsym interposer of libgpumem-um.
 *
 * Why dlsym at all: the CUDA runtime (static or shared) never links to
 * libcuda.  It does dlopen("libcuda.so.1") and then
 * dlsym(handle, "cuGetProcAddress_v2"), and every other driver entry point,
 * cuMemAllocManaged included, comes from that function.  A lookup through a
 * handle searches only that library and its dependencies, never the
 * LD_PRELOAD scope, so exporting cuGetProcAddress* alone catches nothing
 * from the runtime.  Here the three names we replace get our functions;
 * every other lookup goes to the real dlsym untouched.
 *
 * "Untouched" matters: dlsym(RTLD_NEXT, ...) and dlsym(RTLD_DEFAULT, ...)
 * answer relative to the object that called dlsym, which glibc finds from
 * the return address.  A C wrapper that calls the real dlsym would make
 * every RTLD_NEXT lookup in the process relative to this library, and an
 * interposer loaded after us (a profiler's malloc hook, say) would find
 * itself and recurse forever.  So the exported dlsym is a few instructions
 * of assembly that ask gpumem_um_dlsym_route() where to go and then jump
 * there with the caller's own return address still on the stack: the real
 * dlsym sees exactly the call the program made.
 *
 * On architectures without such a trampoline nothing named dlsym is
 * exported; programs that link to libcuda are still advised.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stddef.h>

#include "um_preload.h"

static gpumem_um_dlsym_fn um_dlsym_real;

gpumem_um_dlsym_fn gpumem_um_real_dlsym(void)
{
	/*
	 * glibc 2.34 moved dlsym into libc (GLIBC_2.34); older ones have it in
	 * libdl as GLIBC_2.2.5 (x86_64) or GLIBC_2.17 (aarch64).  RTLD_NEXT:
	 * the definition after ours, normally libc's, or the next interposer's.
	 * No lock: every thread computes the same answer.
	 */
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };
	gpumem_um_dlsym_fn f = __atomic_load_n(&um_dlsym_real, __ATOMIC_ACQUIRE);

	for (size_t i = 0; f == NULL && i < sizeof(vers) / sizeof(vers[0]); i++)
		f = (gpumem_um_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", vers[i]);
	if (f != NULL)
		__atomic_store_n(&um_dlsym_real, f, __ATOMIC_RELEASE);
	return f;
}

#if defined(__x86_64__) || defined(__aarch64__)
static void *um_dlsym_nothing(void *handle, const char *name)
{
	(void)handle;
	(void)name;
	return NULL;
}

static void *um_dlsym_intercept(void *handle, const char *name)
{
	return gpumem_um_dlsym_hooked(handle, name);
}

/* Called only by the trampoline below: the function the caller's dlsym runs. */
__attribute__((used)) gpumem_um_dlsym_fn gpumem_um_dlsym_route(void *handle, const char *name);

gpumem_um_dlsym_fn gpumem_um_dlsym_route(void *handle, const char *name)
{
	gpumem_um_dlsym_fn real = gpumem_um_real_dlsym();

	(void)handle;
	if (real == NULL)       /* cannot happen with glibc; never recurse */
		return um_dlsym_nothing;
	if (name != NULL && name[0] == 'c' && name[1] == 'u' && gpumem_um_hooked(name) >= 0)
		return um_dlsym_intercept;
	return real;
}
#endif

#if defined(__x86_64__)
/* rdi, rsi: handle, name.  Kept across the call; the stack stays 16-aligned. */
__asm__(
	"	.text\n"
	"	.globl	dlsym\n"
	"	.type	dlsym, @function\n"
	"	.p2align 4\n"
	"dlsym:\n"
	"	.cfi_startproc\n"
#if defined(__CET__)
	"	endbr64\n"
#endif
	"	pushq	%rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq	%rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call	gpumem_um_dlsym_route\n"
	"	addq	$8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq	%rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	jmp	*%rax\n"
	"	.cfi_endproc\n"
	"	.size	dlsym, .-dlsym\n");
#elif defined(__aarch64__)
/*
 * x0, x1: handle, name.  "hint 34" is BTI C (a no-op before ARMv8.5); the
 * jump goes through x16, which BTI allows to land on a function's BTI C.
 */
__asm__(
	"	.text\n"
	"	.globl	dlsym\n"
	"	.type	dlsym, %function\n"
	"	.p2align 2\n"
	"dlsym:\n"
	"	.cfi_startproc\n"
	"	hint	34\n"
	"	stp	x29, x30, [sp, #-32]!\n"
	"	.cfi_def_cfa_offset 32\n"
	"	.cfi_offset 29, -32\n"
	"	.cfi_offset 30, -24\n"
	"	mov	x29, sp\n"
	"	stp	x0, x1, [sp, #16]\n"
	"	bl	gpumem_um_dlsym_route\n"
	"	mov	x16, x0\n"
	"	ldp	x0, x1, [sp, #16]\n"
	"	ldp	x29, x30, [sp], #32\n"
	"	.cfi_restore 30\n"
	"	.cfi_restore 29\n"
	"	.cfi_def_cfa_offset 0\n"
	"	br	x16\n"
	"	.cfi_endproc\n"
	"	.size	dlsym, .-dlsym\n");
#endif
