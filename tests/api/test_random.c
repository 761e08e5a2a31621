/* test_random.c: runs a model compiled with `cellc compile --name m` that draws
 * random numbers (tests/test_random_ops.py), through the generic interface,
 * to show how its streams behave (docs/deploying.md, "Random numbers"):
 *
 *   test_random WEIGHTS INPUTS.tf OUTDIR
 *
 * INPUTS.tf holds the model's inputs in order (none for a model without).
 * Writes OUTDIR/run_K.tf, the outputs of these runs, in order:
 *   0  a fresh instance (m_create seeds with 0)
 *   1  the same instance again (the streams go on)
 *   2  after m_seed(m, 0)            (must equal run 0)
 *   3  after m_reset(m)              (must equal run 1: reset leaves the streams)
 *   4  after m_seed(m, 12345)        (seeded nodes as run 0, the others not)
 *   5  a second instance             (must equal run 0)
 * The comparisons are tests/test_random_ops.py's; exit status 1 on an API
 * error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"
#include "m.h"

enum { RUNS = 6 };

static int fail(const char *what, int st)
{
	fprintf(stderr, "test_random: %s: %s\n", what, m_status_str(st));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_random WEIGHTS INPUTS.tf OUTDIR\n");
		return 2;
	}
	rt_tensorfile in;
	int st = rt_tf_open(&in, argv[2]);
	if (st != RT_OK || in.count != m_NUM_INPUTS)
		return fail("inputs", st != RT_OK ? st : RT_ERR_MISMATCH);
	const int64_t *idims[m_NUM_INPUTS + 1];
	const void *inp[m_NUM_INPUTS + 1];
	for (int k = 0; k < m_NUM_INPUTS; k++) {
		idims[k] = in.t[k].dims;
		inp[k] = in.t[k].data;
	}
	m_dims d;
	memset(&d, 0, sizeof d);
	if ((st = m_bind_dims(idims, &d)) != RT_OK)
		return fail("bind_dims", st);
	rt_tensor out[m_NUM_OUTPUTS];
	void *outp[m_NUM_OUTPUTS];
	for (int k = 0; k < m_NUM_OUTPUTS; k++) {
		out[k].name = m_io_name(1, k);
		out[k].dtype = m_io_dtype(1, k);
		out[k].rank = m_io_rank(1, k);
		m_io_shape(&d, 1, k, out[k].dims);
		size_t n = rt_dtype_size(out[k].dtype);
		for (int i = 0; i < out[k].rank; i++)
			n *= (size_t)out[k].dims[i];
		out[k].nbytes = n;
		outp[k] = calloc(n ? n : 1, 1);
		out[k].data = outp[k];
		if (!outp[k])
			return fail("calloc", RT_ERR_NOMEM);
	}
	m *a = NULL, *b = NULL;
	if ((st = m_create(&a, argv[1])) != RT_OK || (st = m_create(&b, argv[1])) != RT_OK)
		return fail("create", st);
	for (int r = 0; r < RUNS; r++) {
		m *use = r == 5 ? b : a;
		if (r == 2)
			st = m_seed(a, 0);
		else if (r == 3)
			st = m_reset(a);
		else if (r == 4)
			st = m_seed(a, 12345);
		if (st != RT_OK)
			return fail("seed/reset", st);
		if ((st = m_run_generic(use, &d, inp, outp)) != RT_OK)
			return fail("run", st);
		char path[4096];
		snprintf(path, sizeof path, "%s/run_%d.tf", argv[3], r);
		if ((st = rt_tf_write(path, m_NUM_OUTPUTS, out)) != RT_OK)
			return fail(path, st);
	}
	m_destroy(a);
	m_destroy(b);
	for (int k = 0; k < m_NUM_OUTPUTS; k++)
		free(outp[k]);
	rt_tf_close(&in);
	return 0;
}
