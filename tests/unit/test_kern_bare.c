/* test_kern_bare.c: libcellrt's kernel tests (test_kern.h, the tests
 * test_runtime.c runs under Check) where Debian builds no Check, under
 * check_bare.h: on a board without an OS, `make unit-tests TARGET=cortex-m4`
 * builds it as build/cortex-m4/tests/test_kern_bare, a firmware image that
 * the harness group cross_cortex_m4 runs on the emulator (qemu-system-arm
 * -kernel); in WebAssembly, `make unit-tests TARGET=wasm32` as a program
 * that cross_wasm32 runs under Node.  There the M profile's kernels run
 * against the same references as x86's and aarch64's: the FPU's float32
 * GEMVs (RT_ISA_MFP) and the DSP extension's int8 GEMV (RT_ISA_DSP, bit for
 * bit the portable loop's); and every SIMD128 kernel (RT_ISA_SIMD128).
 *
 * A board has no environment, and emscripten gives a program under Node
 * one of its own: the variables the tests read are set here,
 * CELLRT_TEST_EMULATED on a board (the cross runs' size limit, lower there:
 * the references' double precision is software on the core; Node runs
 * every product) and CELLRT_TEST_ISAS, the instruction sets the build
 * targets (from the compiler's predefined macros: the run-time choice must
 * find exactly those).
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_bare.h"
#include "cellrt.h"
#include "rt_kern.h"

#include "test_kern.h"

#include <errno.h>
#include <malloc.h>

#if RT_BARE_METAL
/* newlib's aligned_alloc calls posix_memalign, which the arm-none-eabi
 * newlib does not define; its memalign does the work */
int posix_memalign(void **p, size_t align, size_t n);
int posix_memalign(void **p, size_t align, size_t n)
{
	*p = memalign(align, n);
	return *p ? 0 : ENOMEM;
}
#endif

int main(int argc, char **argv)
{
	(void)argc, (void)argv;
	char isas[32] = "";
#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_FEATURE_FMA)
	strcat(isas, "mfp,");
#endif
#ifdef __ARM_FEATURE_DSP
	strcat(isas, "dsp,");
#endif
#ifdef __wasm_simd128__
	strcat(isas, "simd128,");
#endif
	setenv("CELLRT_TEST_ISAS", isas, 1);
#if RT_BARE_METAL
	setenv("CELLRT_TEST_EMULATED", "65536", 1);
#endif
	kern_tcases(suite_create("cellrt"));
	return ck_bare_report();
}
