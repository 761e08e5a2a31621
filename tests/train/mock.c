/* mock.c: the model behind mock.h, with its gradient written by hand.
 *
 *   h_0 = 0,  h_t = a * h_{t-1} + x_t          (element-wise, a [I] trainable)
 *   z_t = head.weight h_t + head.bias          ([batch, C]; the logits output is
 *                                               z_T, or every z_t for ce-all)
 *   ce:          loss = mean_b (logsumexp(z_T,b) - z_T,b[target_b])
 *   ce-all:      the same, mean over every step and batch element
 *   mse:         loss = mean over batch x C of (z_T - target)^2
 *   masked-mse:  loss = sum(mask (z_T - target)^2) / sum(mask)
 *
 * Backward (dz_t = dL/dz_t): dW = sum_t dz_t^T h_t, db = sum_t,b dz_t; for
 * t = T..1: dh_t += dz_t W, dstate_t = grad.x_t = dh_t, da += dh_t * h_{t-1},
 * dh_{t-1} = a * dh_t.  tests/train/check_mock.c compares this with central
 * finite differences.  Dimension legend: T seq, B batch, I input = hidden, C
 * classes.
 */
#include "mock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { I = MOCK_I, C = MOCK_C, BF = MOCK_BATCH_FIRST };

/* element (t, j = b I + i) of x and grad.x: [T, B, I], or [B, T, I] batch-first */
static int64_t xat(int64_t t, int64_t j, int64_t T, int64_t B)
{
	return BF ? (j / I) * T * I + t * I + j % I : t * B * I + j;
}

struct mock {
	float a[I];             /* rec.a */
	float *w;               /* head.weight [C, I] */
	float b[C];             /* head.bias */
	int forward_only;
};

const mock_train_info mock_TRAIN_INFO = {
	.x_input = 0, .batch_axis = BF ? 0 : 1, .time_axis = BF ? 1 : 0, .loss_kind = MOCK_LOSS,
	.logits_output = 0, .loss_output_index = 0, .nclasses = MOCK_LOSS == 0 ? C : 0,
};

static const char *const param_names[3] = {"rec.a", "head.weight", "head.bias"};
static const char *const in_names[3] = {"x", "target", "mask"};
enum { NIN = mock_NUM_INPUTS, ALL = MOCK_LOSS == 1 };
static const char *const out_names[7] = {"logits", "loss", "grad.rec.a", "grad.head.weight",
					 "grad.head.bias", "grad.x", "dstate"};

static int64_t param_numel(int k) { return k == 0 ? I : k == 1 ? (int64_t)C * I : C; }

static float *param_data(mock *m, int k) { return k == 0 ? m->a : k == 1 ? m->w : m->b; }

int mock_create(mock **pm, const char *path)
{
	if (!pm || !path)
		return RT_ERR_ARG;
	*pm = NULL;
	rt_tensorfile tf;
	int st = rt_tf_open(&tf, path);
	if (st != RT_OK)
		return st;
	mock *m = calloc(1, sizeof *m);
	float *w = malloc(sizeof(float) * C * I);
	if (!m || !w) {
		free(m);
		free(w);
		rt_tf_close(&tf);
		return RT_ERR_NOMEM;
	}
	m->w = w;
	const int64_t dims[3][2] = {{I, 0}, {C, I}, {C, 0}};
	for (int k = 0; k < 3 && st == RT_OK; k++) {
		const void *data;
		st = rt_tf_expect(&tf, param_names[k], 1, k == 1 ? 2 : 1, dims[k], &data);
		if (st == RT_OK)
			memcpy(param_data(m, k), data, sizeof(float) * (size_t)param_numel(k));
	}
	/* every other tensor must be an extra ("@...") one */
	for (int k = 0; k < tf.count && st == RT_OK; k++)
		if (tf.t[k].name[0] != '@' && strcmp(tf.t[k].name, "rec.a") && strcmp(tf.t[k].name, "head.weight") &&
		    strcmp(tf.t[k].name, "head.bias"))
			st = RT_ERR_MISMATCH;
	rt_tf_close(&tf);
	if (st != RT_OK) {
		mock_destroy(m);
		return st;
	}
	*pm = m;
	return RT_OK;
}

void mock_destroy(mock *m)
{
	if (m)
		free(m->w);
	free(m);
}

int mock_reset(mock *m) { return m ? RT_OK : RT_ERR_ARG; }

const char *mock_status_str(int status) { return rt_status_str(status); }

const char *mock_io_name(int is_output, int k)
{
	if (is_output)
		return k >= 0 && k < 7 ? out_names[k] : NULL;
	return k >= 0 && k < NIN ? in_names[k] : NULL;
}

int mock_io_dtype(int is_output, int k)
{
	if (!mock_io_name(is_output, k))
		return -1;
	return !is_output && k == 1 && MOCK_LOSS <= 1 ? 7 : 1;
}

int mock_io_rank(int is_output, int k)
{
	static const int in_rank[3] = {3, MOCK_LOSS == 0 ? 1 : 2, 2}, out_rank[7] = {ALL ? 3 : 2, 0, 1, 2, 1, 3, 3};
	if (!mock_io_name(is_output, k))
		return -1;
	return is_output ? out_rank[k] : in_rank[k];
}

int mock_bind_dims(const int64_t *const *input_dims, mock_dims *d)
{
	if (!input_dims || !d || !input_dims[0] || !input_dims[1] || (NIN > 2 && !input_dims[2]))
		return RT_ERR_ARG;
	d->seq = input_dims[0][BF];
	d->batch = input_dims[0][!BF];
	if (d->seq < 1 || d->batch < 1 || input_dims[0][2] != I)
		return RT_ERR_SHAPE;
	for (int k = 1; k < NIN; k++) {
		int64_t want[2];
		mock_io_shape(d, 0, k, want);
		for (int i = 0; i < mock_io_rank(0, k); i++)
			if (input_dims[k][i] != want[i])
				return RT_ERR_SHAPE;
	}
	return RT_OK;
}

int mock_io_shape(const mock_dims *d, int is_output, int k, int64_t *dims)
{
	if (!d || mock_io_rank(is_output, k) < 0)
		return RT_ERR_ARG;
	const int64_t T = d->seq, B = d->batch;
	if (!is_output) {
		if (k == 0)
			dims[BF] = T, dims[!BF] = B, dims[2] = I;
		else if (MOCK_LOSS == 0)
			dims[0] = B;
		else if (MOCK_LOSS == 1)
			dims[0] = T, dims[1] = B;
		else
			dims[0] = B, dims[1] = C;
		return RT_OK;
	}
	switch (k) {
	case 0:
		if (ALL)
			dims[0] = T, dims[1] = B, dims[2] = C;
		else
			dims[0] = B, dims[1] = C;
		break;
	case 1: break;
	case 2: dims[0] = I; break;
	case 3: dims[0] = C, dims[1] = I; break;
	case 4: dims[0] = C; break;
	case 5: dims[BF] = T, dims[!BF] = B, dims[2] = I; break;
	default: dims[0] = T, dims[1] = B, dims[2] = I; break;
	}
	return RT_OK;
}

int mock_run_generic(mock *m, const mock_dims *d, const void *const *in, void *const *out)
{
	for (int k = 0; k < NIN; k++)
		if (!in || !in[k])
			return RT_ERR_ARG;
	if (!m || !d || !out || !out[0] || !out[1] || d->seq < 1 || d->batch < 1)
		return RT_ERR_ARG;
	const int64_t T = d->seq, B = d->batch, T0 = ALL ? 1 : T;  /* z_t for t in [T0, T] */
	const float *x = in[0];
	float *logits = out[0], *loss = out[1];
	float *h = calloc((size_t)((T + 1) * B * I), sizeof *h);   /* h_0 .. h_T */
	double *dz = calloc((size_t)(T * B * C), sizeof *dz);     /* dz_t at (t-1) B C */
	float *dh = calloc((size_t)(B * I), sizeof *dh);
	if (!h || !dz || !dh) {
		free(h), free(dz), free(dh);
		return RT_ERR_NOMEM;
	}
	for (int64_t t = 1; t <= T; t++)
		for (int64_t j = 0; j < B * I; j++)
			h[t * B * I + j] = m->a[j % I] * h[(t - 1) * B * I + j] + x[xat(t - 1, j, T, B)];
	double L = 0, msum = 0;
	int st = RT_OK;
	for (int64_t t = T0; t <= T && st == RT_OK; t++)
		for (int64_t b = 0; b < B; b++) {
			const float *ht = h + t * B * I + b * I;
			float *z = logits + (ALL ? (t - 1) * B * C : 0) + b * C;
			double *g = dz + (t - 1) * B * C + b * C;
			for (int c = 0; c < C; c++) {
				double s = m->b[c];
				for (int i = 0; i < I; i++)
					s += (double)m->w[c * I + i] * ht[i];
				z[c] = (float)s;
			}
			if (MOCK_LOSS <= 1) {
				int64_t y = ((const int64_t *)in[1])[ALL ? (t - 1) * B + b : b];
				if (y < 0 || y >= C) {
					st = RT_ERR_INDEX;
					break;
				}
				double mx = z[0], se = 0, n = (double)(B * (T - T0 + 1));
				for (int c = 1; c < C; c++)
					mx = fmax(mx, z[c]);
				for (int c = 0; c < C; c++)
					se += exp(z[c] - mx);
				L += (mx + log(se) - z[y]) / n;
				for (int c = 0; c < C; c++)
					g[c] = (exp(z[c] - mx) / se - (c == y)) / n;
			} else {
				const float *y = (const float *)in[1] + b * C;
				const float *mk = MOCK_LOSS == 3 ? (const float *)in[2] + b * C : NULL;
				for (int c = 0; c < C; c++) {
					double e = (double)z[c] - y[c], w = mk ? mk[c] : 1.0;
					L += w * e * e;
					msum += w;
					g[c] = 2 * w * e;
				}
			}
		}
	if (MOCK_LOSS >= 2)         /* mse divides by B C, masked-mse by sum(mask) */
		for (int64_t j = 0; j < T * B * C; j++)
			dz[j] /= msum;
	if (st == RT_OK) {
		*loss = (float)(MOCK_LOSS >= 2 ? L / msum : L);
		if (!m->forward_only) {
			float *ga = out[2], *gw = out[3], *gb = out[4], *gx = out[5], *ds = out[6];
			double da[I] = {0}, sb[C] = {0}, *sw = calloc((size_t)C * I, sizeof *sw);
			if (!sw) {
				free(h), free(dz), free(dh);
				return RT_ERR_NOMEM;
			}
			for (int64_t t = T; t >= 1; t--) {
				const float *ht = h + t * B * I, *hp = h + (t - 1) * B * I;
				const double *g = dz + (t - 1) * B * C;
				if (t >= T0)
					for (int64_t b = 0; b < B; b++)
						for (int c = 0; c < C; c++) {
							sb[c] += g[b * C + c];
							for (int i = 0; i < I; i++) {
								sw[c * I + i] += g[b * C + c] * ht[b * I + i];
								dh[b * I + i] += (float)(g[b * C + c] * m->w[c * I + i]);
							}
						}
				for (int64_t j = 0; j < B * I; j++) {
					ds[(t - 1) * B * I + j] = dh[j];
					gx[xat(t - 1, j, T, B)] = dh[j];
					da[j % I] += (double)dh[j] * hp[j];
					dh[j] *= m->a[j % I];
				}
			}
			for (int i = 0; i < I; i++)
				ga[i] = (float)da[i];
			for (int j = 0; j < C * I; j++)
				gw[j] = (float)sw[j];
			for (int c = 0; c < C; c++)
				gb[c] = (float)sb[c];
			free(sw);
		}
	}
	free(h), free(dz), free(dh);
	return st;
}

int mock_param(mock *m, int k, const char **name, float **data, int64_t *numel)
{
	if (!m || k < 0 || k >= 3)
		return RT_ERR_ARG;
	if (name)
		*name = param_names[k];
	if (data)
		*data = param_data(m, k);
	if (numel)
		*numel = param_numel(k);
	return RT_OK;
}

int mock_set_forward_only(mock *m, int on)
{
	if (!m)
		return RT_ERR_ARG;
	m->forward_only = on != 0;
	return RT_OK;
}

int mock_save(mock *m, const char *path, int nextra, const rt_tensor *extra)
{
	if (!m || !path || nextra < 0 || (nextra && !extra))
		return RT_ERR_ARG;
	rt_tensor *t = calloc((size_t)nextra + 3, sizeof *t);
	if (!t)
		return RT_ERR_NOMEM;
	const int64_t dims[3][2] = {{I, 0}, {C, I}, {C, 0}};
	for (int k = 0; k < 3; k++) {
		t[k].name = param_names[k];
		t[k].dtype = 1;
		t[k].rank = k == 1 ? 2 : 1;
		t[k].dims[0] = dims[k][0];
		t[k].dims[1] = dims[k][1];
		t[k].data = param_data(m, k);
		t[k].nbytes = sizeof(float) * (size_t)param_numel(k);
	}
	for (int k = 0; k < nextra; k++)
		t[3 + k] = extra[k];
	int st = rt_tf_write(path, nextra + 3, t);
	free(t);
	return st;
}
