/* SPDX-License-Identifier: GPL-2.0-or-later */
// ctxhold SECONDS [READY_FILE]: a CUDA context on every device this process
// sees (through the job's MPS daemon where it has one), each device's UUID
// printed, READY_FILE written once all contexts are up, then held for
// SECONDS: so a test can ask nvidia-smi from outside which GPUs the job's
// processes (and its MPS server) are on while it runs.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
	int n = 0, secs = argc > 1 ? atoi(argv[1]) : 5;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		printf("ctxhold: count=0 error=%s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("ctxhold: count=%d\n", n);
	for (int i = 0; i < n; i++) {
		cudaDeviceProp p;
		const unsigned char *u;
		void *buf = NULL;

		if (cudaSetDevice(i) != cudaSuccess || cudaGetDeviceProperties(&p, i) != cudaSuccess ||
		    (e = cudaMalloc(&buf, 1 << 20)) != cudaSuccess) {
			printf("ctxhold: device %d: %s\n", i, cudaGetErrorString(cudaGetLastError()));
			return 1;
		}
		u = (const unsigned char *)p.uuid.bytes;
		printf("ctxhold: %d GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", i,
		       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	fflush(stdout);
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");

		if (f)
			fclose(f);
	}
	sleep(secs);
	return 0;
}
