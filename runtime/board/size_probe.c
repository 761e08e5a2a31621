/* size_probe.c: the size probe of a model on a board (board.h), which the
 * generated Makefile builds as NAME_size for `make size TARGET=...`:
 *
 *   cc -DCELLC_MODEL=NAME -include NAME.h size_probe.c libNAME.a libcellrt.a BOARD.o
 *
 * A firmware with nothing but the model: the instance in a static arena of
 * NAME_ARENA_BYTES (its own section, .bss.arena, which size_report.awk
 * counts apart), made once and run once at the largest dims
 * (NAME_DIMS_MAX) on zeros, its inputs and outputs in the board's free
 * RAM (the caller's buffers: counted apart), the stack that each call took
 * measured by painting (rt_board_stack_paint).  It prints, one per line,
 *   arena BYTES / io BYTES / stack BYTES / stack_size BYTES / status CODE TEXT
 * with no C library output (no printf, so nothing in the image allocates
 * unless the model or libcellrt does: size_report.awk checks the link map)
 * and exits 0 when the run returned RT_OK.  The model must be built with
 * --embed-weights --no-malloc.
 */
#ifndef CELLC_MODEL
#error "compile with -DCELLC_MODEL=NAME -include NAME.h"
#endif

#include <stdint.h>
#include <string.h>

#include "board.h"
#include "cellrt.h"

#define PROBE_CAT_(a, b) a##b
#define PROBE_CAT(a, b) PROBE_CAT_(a, b)
#define M(x) PROBE_CAT(CELLC_MODEL, x)  /* M(_run_generic) is NAME_run_generic */

#if !M(_NO_MALLOC) || !M(_EMBEDDED_WEIGHTS)
#error "make size: compile the model with cellc compile --embed-weights --no-malloc (a firmware has no heap and no files)"
#endif

enum { NIN = M(_NUM_INPUTS), NOUT = M(_NUM_OUTPUTS) };

static _Alignas(64) unsigned char arena[M(_ARENA_BYTES)];

static void put_line(const char *key, size_t v, const char *text)
{
	char b[96];
	size_t n = strlen(key);
	memcpy(b, key, n);
	b[n++] = ' ';
	char d[24];
	int k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < 24);
	while (k)
		b[n++] = d[--k];
	if (text)
		b[n++] = ' ';
	for (size_t i = 0; text && text[i] && n < sizeof b - 2; i++)
		b[n++] = text[i];
	b[n++] = '\n';
	rt_board_write(1, b, n);
}

/* Buffers for input or output k (is_output) at dims d, from the free RAM
 * [*lo, hi), zeroed; NULL when it does not fit. */
static void *io_buffer(const M(_dims) * d, int is_output, int k, unsigned char **lo, unsigned char *hi,
		       size_t *total)
{
	int64_t dims[RT_TF_MAXRANK];
	if (M(_io_shape)(d, is_output, k, dims) != RT_OK)
		return NULL;
	size_t bytes = rt_dtype_size(M(_io_dtype)(is_output, k));
	for (int i = 0; i < M(_io_rank)(is_output, k); i++)
		bytes *= (size_t)dims[i];
	bytes = (bytes + 63) / 64 * 64;
	unsigned char *p = (unsigned char *)(((uintptr_t)*lo + 63) & ~(uintptr_t)63);
	if (p > hi || (size_t)(hi - p) < bytes)
		return NULL;
	memset(p, 0, bytes);
	*lo = p + bytes;
	*total += bytes;
	return p;
}

int main(int argc, char **argv)
{
	(void)argc, (void)argv;
	CELLC_MODEL *m = NULL;
	size_t sp = rt_board_stack_paint();
	int st = M(_create_in)(&m, arena, sizeof arena, NULL);
	size_t stack = rt_board_stack_used(sp), io = 0;
	put_line("arena", sizeof arena, NULL);
	if (st == RT_OK) {
		const M(_dims) d = M(_DIMS_MAX);
		const void *in[NIN + 1] = {0};
		void *out[NOUT + 1] = {0};
		unsigned char *lo, *hi;
		rt_board_free_ram(&lo, &hi);
		for (int k = 0; k < NIN + NOUT && st == RT_OK; k++) {
			void *p = io_buffer(&d, k >= NIN, k < NIN ? k : k - NIN, &lo, hi, &io);
			if (!p)
				st = RT_ERR_NOMEM;
			else if (k < NIN)
				in[k] = p;
			else
				out[k - NIN] = p;
		}
		if (st == RT_OK) {
			sp = rt_board_stack_paint();
			st = M(_run_generic)(m, &d, in, out);
			size_t used = rt_board_stack_used(sp);
			stack = used > stack ? used : stack;
		}
	}
	put_line("io", io, NULL);
	put_line("stack", stack, NULL);
	put_line("stack_size", rt_board_stack_size(), NULL);
	put_line("status", (size_t)st, M(_status_str)(st));
	return st == RT_OK ? 0 : 1;
}
