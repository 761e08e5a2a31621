/* gemm_time.h: time spent in the generated code's recurrent products
 * (bench/gemm_time.c, linked with -Wl,--wrap into time_cellc_gemm). */
#ifndef BENCH_GEMM_TIME_H
#define BENCH_GEMM_TIME_H

#include <stdint.h>

/* Clears the counts; from now on the calls with inner dimension K count
 * (K 0: every call, the training step's profile). */
void bench_gemm_reset(int64_t K);
/* The time in the counted calls of the thread that spent the most in them
 * (seconds): about the wall time spent in products, both when the threads
 * of a team run their shares of each product together and when one thread
 * calls a product that OpenBLAS's own threads share. */
double bench_gemm_seconds(void);
/* The counted calls' rate (the sum over threads of FLOPs / time in the
 * calls, GFLOP/s), their FLOPs and number; -1 when none was counted. */
int bench_gemm_result(double *gflops, double *flops, long *calls);

#endif
