/* driver.c: the generic driver that `cellc verify` builds beside a model.
 *
 *   NAME_driver WEIGHTS INPUTS OUTPUTS
 *
 * Reads the model's inputs from the tensor file INPUTS (tensor k is input k,
 * in the order of NAME_io_name(0, k); names are for people), binds the
 * dimension symbols from their shapes, allocates every output with
 * NAME_io_shape, runs the whole sequence with NAME_run_generic and writes
 * the outputs, in order and named NAME_io_name(1, k), to the tensor file
 * OUTPUTS at the dims NAME_output_dims reports (an output whose length the
 * data decide is written at the length the run found, not its bound).  Exit status: 0 ok, 1 failure (reason on stderr), 2 usage.
 *
 * It uses only the generic interface of the emitted header, so one source
 * serves every model; cellc writes NAME_driver.c as
 *
 *     #define CELLC_MODEL NAME
 *     #include "NAME.h"
 *     ...this file...
 */
#ifndef CELLC_MODEL
#error "define CELLC_MODEL as the model's NAME and include NAME.h before driver.c"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"

#define DRV_CAT_(a, b) a##b
#define DRV_CAT(a, b) DRV_CAT_(a, b)
#define M(x) DRV_CAT(CELLC_MODEL, x)    /* M(_run_generic) is NAME_run_generic */

#define NIN M(_NUM_INPUTS)
#define NOUT M(_NUM_OUTPUTS)

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("driver: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

/* Allocates output k for the bound dims; 0 on success.  A name too long
 * for a tensor file is replaced by "output_K" (kept in alt[24]). */
static int alloc_output(const M(_dims) *d, int k, rt_tensor *t, void **buf, char *alt)
{
	const char *name = M(_io_name)(1, k);
	snprintf(alt, 24, "output_%d", k);
	t->name = name && *name && strlen(name) < RT_TF_NAME ? name : alt;
	name = t->name;
	t->dtype = M(_io_dtype)(1, k);
	t->rank = M(_io_rank)(1, k);
	if (t->rank < 0 || t->rank > RT_TF_MAXRANK)
		return fail("output %d: rank %d is not supported", k, t->rank);
	int st = M(_io_shape)(d, 1, k, t->dims);
	if (st != RT_OK)
		return fail("output %d (%s): %s", k, name, M(_status_str)(st));
	size_t n = rt_dtype_size(t->dtype);
	if (n == 0)
		return fail("output %d (%s): dtype %d is not supported", k, name, t->dtype);
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] < 0 || (t->dims[i] > 0 && n > SIZE_MAX / 2 / (size_t)t->dims[i]))
			return fail("output %d (%s): dimension %d (%lld) is invalid", k, name, i,
				    (long long)t->dims[i]);
		n *= (size_t)t->dims[i];
	}
	t->nbytes = n;
	*buf = calloc(n ? n : 1, 1);
	if (!*buf)
		return fail("output %d (%s): cannot allocate %zu bytes", k, name, n);
	t->data = *buf;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s WEIGHTS INPUTS OUTPUTS\n", argv[0]);
		return 2;
	}
	const char *weights = argv[1], *inputs = argv[2], *outputs = argv[3];
	rt_tensorfile in;
	CELLC_MODEL *m = NULL;
	const void *inp[NIN + 1] = {0};
	const int64_t *in_dims[NIN + 1] = {0};
	void *outp[NOUT + 1] = {0};
	rt_tensor out[NOUT + 1];
	char alt[NOUT + 1][24];
	M(_dims) d;
	int rc = 1, st;

	memset(out, 0, sizeof out);
	memset(&d, 0, sizeof d);
	st = rt_tf_open(&in, inputs);
	if (st != RT_OK)
		return fail("%s: %s", inputs, M(_status_str)(st));
	if (in.count != NIN) {
		fail("%s holds %d tensors, the model has %d inputs", inputs, in.count, NIN);
		goto done;
	}
	for (int k = 0; k < NIN; k++) {
		const rt_tensor *t = &in.t[k];
		if (t->dtype != M(_io_dtype)(0, k) || t->rank != M(_io_rank)(0, k)) {
			fail("input %d (%s): dtype %d rank %d given, the model wants dtype %d rank %d", k,
			     M(_io_name)(0, k), t->dtype, t->rank, M(_io_dtype)(0, k), M(_io_rank)(0, k));
			goto done;
		}
		inp[k] = t->data;
		in_dims[k] = t->dims;
	}
	st = M(_bind_values)(in_dims, inp, &d);
	if (st != RT_OK) {
		fail("input shapes: %s", M(_status_str)(st));
		goto done;
	}
	for (int k = 0; k < NOUT; k++)
		if (alloc_output(&d, k, &out[k], &outp[k], alt[k]))
			goto done;
	st = M(_create)(&m, weights);
	if (st != RT_OK) {
		fail("%s: %s", weights, M(_status_str)(st));
		goto done;
	}
	st = M(_run_generic)(m, &d, inp, outp);
	if (st != RT_OK) {
		fail("run: %s", M(_status_str)(st));
		goto done;
	}
	/* an output whose length the data decide holds its run's dims, packed */
	for (int k = 0; k < NOUT; k++) {
		st = M(_output_dims)(m, &d, k, out[k].dims);
		if (st != RT_OK) {
			fail("output %d: %s", k, M(_status_str)(st));
			goto done;
		}
		size_t n = rt_dtype_size(out[k].dtype);
		for (int i = 0; i < out[k].rank; i++)
			n *= (size_t)out[k].dims[i];
		if (n > out[k].nbytes) {
			fail("output %d: the run's dims exceed its buffer", k);
			goto done;
		}
		out[k].nbytes = n;
	}
	st = rt_tf_write(outputs, NOUT, out);
	if (st != RT_OK) {
		fail("%s: %s", outputs, M(_status_str)(st));
		goto done;
	}
	rc = 0;
done:
	if (m)
		M(_destroy)(m);
	for (int k = 0; k < NOUT; k++)
		free(outp[k]);
	rt_tf_close(&in);
	return rc;
}
