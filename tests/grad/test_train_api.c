/* test_train_api.c: the extra API of a train build (cellc compile --train),
 * on tests/out/grad_smoke/lstm_ce/model.cell compiled as `net` (an LSTM
 * layer, hidden 4, and a linear head of 5 classes on the last step).
 *
 * Checks, each printed as PASS|FAIL grad/api/<name>:
 *   params       NAME_NUM_PARAMS, names and element counts of NAME_param in
 *                source order
 *   live_params  a parameter changed through NAME_param changes the loss
 *                (derived weights, e.g. the pre-summed bias, are recomputed
 *                from the parameters at run time)
 *   fd_grad      central finite differences of the loss in a few parameter
 *                elements agree with grad.<P>
 *   fwd_only     NAME_set_forward_only(m, 1): same loss, gradient outputs
 *                left untouched (or NULL); back to 0: the same gradients again
 *   save         NAME_save with '@' tensors, then NAME_create on the file:
 *                same loss; a checkpoint with an extra tensor not named '@...'
 *                is refused
 *   info         NAME_TRAIN_INFO (ce, logits output 0, loss output 1, 5 classes)
 *
 * usage: test_train_api WEIGHTS TMPDIR
 */
#include "net.h"
#include "cellrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T = 6, B = 3, I = 3, C = 5, MAXOUT = 16 };

static int failures;

static void check(int ok, const char *name, const char *detail)
{
	printf("%s grad/api/%s%s%s\n", ok ? "PASS" : "FAIL", name, detail ? " " : "", detail ? detail : "");
	failures += !ok;
}

static float x[T * B * I];
static int64_t target[B];
static float *outs[MAXOUT];
static int64_t outn[MAXOUT];

static int run(net *m, float *loss)
{
	net_dims d = {.seq = T, .batch = B};
	const void *in[2] = {x, target};
	void *out[MAXOUT];
	for (int k = 0; k < net_NUM_OUTPUTS; k++)
		out[k] = outs[k];
	int st = net_run_generic(m, &d, in, out);
	*loss = outs[net_TRAIN_INFO.loss_output_index][0];
	return st;
}

static int out_index(const char *name)
{
	for (int k = 0; k < net_NUM_OUTPUTS; k++)
		if (!strcmp(net_io_name(1, k), name))
			return k;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_train_api WEIGHTS TMPDIR\n");
		return 2;
	}
	unsigned s = 12345u;
	for (int i = 0; i < T * B * I; i++) {
		s = s * 1103515245u + 12345u;
		x[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f;
	}
	for (int b = 0; b < B; b++)
		target[b] = (b * 2 + 1) % C;
	net_dims d = {.seq = T, .batch = B};
	if (net_NUM_OUTPUTS > MAXOUT)
		return 2;
	for (int k = 0; k < net_NUM_OUTPUTS; k++) {
		int64_t dims[8], n = 1;
		net_io_shape(&d, 1, k, dims);
		for (int i = 0; i < net_io_rank(1, k); i++)
			n *= dims[i];
		outn[k] = n;
		outs[k] = calloc((size_t)n, sizeof(float));
	}
	net *m;
	int st = net_create(&m, argv[1]);
	if (st != RT_OK) {
		printf("FAIL grad/api/create %s\n", net_status_str(st));
		return 1;
	}

	/* params */
	static const char *const want[] = {"h1.W_x", "h1.b_x", "h1.W_h", "h1.b_h", "y.weight", "y.bias"};
	static const int64_t wantn[] = {16 * 3, 16, 16 * 4, 16, 5 * 4, 5};
	int ok = net_NUM_PARAMS == 6;
	for (int k = 0; ok && k < net_NUM_PARAMS; k++) {
		const char *name;
		float *data;
		int64_t n;
		ok = net_param(m, k, &name, &data, &n) == RT_OK && !strcmp(name, want[k]) && n == wantn[k] && data;
	}
	ok = ok && net_param(m, 6, NULL, NULL, NULL) == RT_ERR_ARG;
	check(ok, "params", NULL);

	/* info */
	check(net_TRAIN_INFO.loss_kind == 0 && net_TRAIN_INFO.logits_output == 0 &&
	      net_TRAIN_INFO.loss_output_index == 1 && net_TRAIN_INFO.nclasses == 5 &&
	      net_TRAIN_INFO.x_input == 0 && net_TRAIN_INFO.time_axis == 0 && net_TRAIN_INFO.batch_axis == 1,
	      "info", NULL);

	float L0;
	st = run(m, &L0);
	check(st == RT_OK && isfinite(L0) && L0 > 0, "run", net_status_str(st));

	/* live_params and fd_grad: b_h only enters through the pre-summed bias */
	float *bh, *wh;
	net_param(m, 3, NULL, &bh, NULL);
	net_param(m, 2, NULL, &wh, NULL);
	int gbh = out_index("grad.h1.b_h"), gwh = out_index("grad.h1.W_h");
	float *G = malloc((size_t)(outn[gbh] + outn[gwh]) * sizeof(float));
	memcpy(G, outs[gbh], (size_t)outn[gbh] * sizeof(float));
	memcpy(G + outn[gbh], outs[gwh], (size_t)outn[gwh] * sizeof(float));
	float L1;
	bh[5] += 0.5f;
	run(m, &L1);
	bh[5] -= 0.5f;
	check(L1 != L0, "live_params", NULL);
	double worst = 0;
	const float eps = 1e-2f;
	for (int j = 0; j < 6; j++) {
		float *p = j < 3 ? &bh[j * 5] : &wh[j * 7];
		float g = j < 3 ? G[j * 5] : G[outn[gbh] + j * 7];
		float save = *p, Lp, Lm;
		*p = save + eps;
		run(m, &Lp);
		*p = save - eps;
		run(m, &Lm);
		*p = save;
		double fd = ((double)Lp - Lm) / (2.0 * eps);
		double err = fabs(fd - g) / (fabs(g) + 1e-3);
		if (err > worst)
			worst = err;
	}
	char msg[64];
	snprintf(msg, sizeof msg, "worst relative error %.3g", worst);
	check(worst < 2e-2, "fd_grad", msg);

	/* fwd_only */
	run(m, &L0);
	int gk = out_index("grad.y.weight");
	float *g0 = malloc((size_t)outn[gk] * sizeof(float));
	memcpy(g0, outs[gk], (size_t)outn[gk] * sizeof(float));
	for (int k = net_TRAIN_INFO.loss_output_index + 1; k < net_NUM_OUTPUTS; k++)
		for (int64_t i = 0; i < outn[k]; i++)
			outs[k][i] = 12345.0f;
	ok = net_set_forward_only(m, 1) == RT_OK && run(m, &L1) == RT_OK && L1 == L0;
	for (int k = net_TRAIN_INFO.loss_output_index + 1; ok && k < net_NUM_OUTPUTS; k++)
		for (int64_t i = 0; ok && i < outn[k]; i++)
			ok = outs[k][i] == 12345.0f;
	/* gradient outputs may be NULL in forward-only mode */
	{
		const void *in[2] = {x, target};
		void *out[MAXOUT] = {0};
		for (int k = 0; k <= net_TRAIN_INFO.loss_output_index; k++)
			out[k] = outs[k];
		ok = ok && net_run_generic(m, &d, in, out) == RT_OK && outs[net_TRAIN_INFO.loss_output_index][0] == L0;
	}
	ok = ok && net_set_forward_only(m, 0) == RT_OK && run(m, &L1) == RT_OK &&
	     memcmp(g0, outs[gk], (size_t)outn[gk] * sizeof(float)) == 0;
	check(ok, "fwd_only", NULL);

	/* save */
	char path[512], bad[512];
	snprintf(path, sizeof path, "%s/ckpt.weights", argv[2]);
	snprintf(bad, sizeof bad, "%s/bad.weights", argv[2]);
	float state[16 * 3] = {1};
	rt_tensor extra[2] = {
		{.name = "@opt/h1.W_x/m", .dtype = 1, .rank = 2, .dims = {16, 3}, .data = state, .nbytes = sizeof state},
		{.name = "@train/step", .dtype = 1, .rank = 1, .dims = {1}, .data = state, .nbytes = sizeof(float)},
	};
	wh[0] += 0.25f;
	run(m, &L0);
	st = net_save(m, path, 2, extra);
	net *m2 = NULL;
	int st2 = st == RT_OK ? net_create(&m2, path) : st;
	ok = st == RT_OK && st2 == RT_OK;
	if (ok) {
		run(m2, &L1);
		ok = L1 == L0;
	}
	rt_tensor notopt = extra[1];
	notopt.name = "train_step";
	net *m3 = NULL;
	ok = ok && net_save(m, bad, 1, &notopt) == RT_OK && net_create(&m3, bad) == RT_ERR_MISMATCH;
	check(ok, "save", net_status_str(st2));
	net_destroy(m2);
	net_destroy(m);
	free(G);
	free(g0);
	for (int k = 0; k < net_NUM_OUTPUTS; k++)
		free(outs[k]);
	return failures ? 1 : 0;
}
