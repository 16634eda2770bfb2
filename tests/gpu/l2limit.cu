/* SPDX-License-Identifier: GPL-2.0-or-later */
// An ordinary CUDA program that knows nothing of gpumem: it prints the
// persisting-L2 limit its context got, so a test can see what the policy
// (through CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT) did.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
	cudaDeviceProp prop;
	size_t limit = 0;
	cudaError_t e = cudaGetDeviceProperties(&prop, 0);

	if (e != cudaSuccess) {
		printf("l2limit: error %s\n", cudaGetErrorString(e));
		return 1;
	}
	e = cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize);
	if (e != cudaSuccess) {
		printf("l2limit: error %s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("l2limit: device=%s l2=%d persisting_max=%d limit=%zu\n", prop.name,
	       prop.l2CacheSize, prop.persistingL2CacheMaxSize, limit);
	return 0;
}
