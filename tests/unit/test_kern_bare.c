/* test_kern_bare.c: libcellrt's kernel tests (test_kern.h, the tests
 * test_runtime.c runs under Check) on a board without an OS, under
 * check_bare.h: `make unit-tests TARGET=cortex-m4` builds it as
 * build/cortex-m4/tests/test_kern_bare, a firmware image that the harness
 * group cross_cortex_m4 runs on the emulator (qemu-system-arm -kernel).
 * There the M profile's kernels run against the same references as x86's
 * and aarch64's: the FPU's float32 GEMVs (RT_ISA_MFP) and the DSP
 * extension's int8 GEMV (RT_ISA_DSP, bit for bit the portable loop's).
 *
 * A board has no environment: the variables the tests read are set here,
 * CELLRT_TEST_EMULATED (the cross runs' size limit, lower here: the
 * references' double precision is software on the core) and CELLRT_TEST_ISAS,
 * the instruction sets the core was built for (from the compiler's
 * predefined macros: the run-time choice must find exactly those).
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

/* newlib's aligned_alloc calls posix_memalign, which the arm-none-eabi
 * newlib does not define; its memalign does the work */
int posix_memalign(void **p, size_t align, size_t n);
int posix_memalign(void **p, size_t align, size_t n)
{
	*p = memalign(align, n);
	return *p ? 0 : ENOMEM;
}

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
	setenv("CELLRT_TEST_ISAS", isas, 1);
	setenv("CELLRT_TEST_EMULATED", "65536", 1);
	kern_tcases(suite_create("cellrt"));
	return ck_bare_report();
}
