/* machine.c: the machine's limits, without a model.
 *
 *   machine THREADS [H B]...     (default: H 128 and 256 at B 1 and 128)
 *
 * Prints which kernels OpenBLAS picked (its core name: "Prescott" means the
 * generic SSE3 kernels), main-memory bandwidth, and for every (H, B) the
 * limits of bench/limits.h, as `key=value` words that bench/run.py reads:
 *
 *   core=Haswell threads=1 dram_gbs=12.3
 *   limit H=256 B=1 sgemv_gflops=.. sgemm_gflops=0 bw_weights_gbs=.. weights_bytes=..
 *
 * bench/run.py runs it once per thread count and OPENBLAS_CORETYPE setting
 * to report what the CPU detection of OpenBLAS costs.
 */
#include "limits.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc < 2 || argc % 2 != 0) {
		fprintf(stderr, "usage: machine THREADS [H B]...\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	printf("core=%s threads=%d dram_gbs=%.2f\n", bench_blas_core(), threads,
	       bench_dram_bw(threads));
	static const char *dflt[] = {"128", "1", "128", "128", "256", "1", "256", "128"};
	const char **hb = argc > 2 ? (const char **)argv + 2 : dflt;
	int n = argc > 2 ? argc - 2 : 8;
	for (int k = 0; k + 1 < n; k += 2) {
		int64_t H = atoll(hb[k]), B = atoll(hb[k + 1]);
		bench_limits L;
		if (H <= 0 || B <= 0 || bench_measure_limits(H, B, threads, 4, &L) != 0) {
			fprintf(stderr, "machine: cannot measure H=%s B=%s\n", hb[k], hb[k + 1]);
			return 1;
		}
		printf("limit H=%lld B=%lld sgemv_gflops=%.2f sgemm_gflops=%.2f bw_weights_gbs=%.2f "
		       "weights_bytes=%.0f\n", (long long)H, (long long)B, L.sgemv_gflops,
		       L.sgemm_gflops, L.bw_weights_gbs, L.weights_bytes);
	}
	return 0;
}
