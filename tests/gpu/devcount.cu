/* SPDX-License-Identifier: GPL-2.0-or-later */
// What CUDA finds in this process: the device count (or the error that
// stands for none) and each device's UUID, so a test can see which GPUs a
// cgroup-confined job was left.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		printf("devcount: count=0 error=%s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("devcount: count=%d\n", n);
	for (int i = 0; i < n; i++) {
		cudaDeviceProp p;
		const unsigned char *u;

		if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
			return 1;
		u = (const unsigned char *)p.uuid.bytes;
		printf("devcount: %d GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", i,
		       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	return 0;
}
