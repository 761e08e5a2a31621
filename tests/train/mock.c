/* mock.c: the model behind mock.h, with its gradient written by hand.
 *
 *   h_0 = 0,  h_t = a * h_{t-1} + x_t          (element-wise, a [I] trainable)
 *   logits = head.weight h_T + head.bias       ([batch, C])
 *   ce:  loss = mean_b (logsumexp(logits_b) - logits_b[target_b])
 *   mse: loss = mean over batch x C of (logits - target)^2
 *
 * Backward (dz = dL/dlogits): dW = dz^T h_T, db = sum_b dz, dh_T = dz W,
 * then for t = T..1: dstate_t = dh_t, grad.x_t = dh_t, da += dh_t * h_{t-1},
 * dh_{t-1} = a * dh_t.  tests/train/check_mock.c compares this with central
 * finite differences.  Dimension legend: T seq, B batch, I input = hidden, C
 * classes.
 */
#include "mock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { I = MOCK_I, C = MOCK_C };

struct mock {
	float a[I];             /* rec.a */
	float *w;               /* head.weight [C, I] */
	float b[C];             /* head.bias */
	int forward_only;
};

const mock_train_info mock_TRAIN_INFO = {
	.x_input = 0, .batch_axis = 1, .time_axis = 0, .loss_kind = MOCK_LOSS,
	.logits_output = 0, .loss_output_index = 0, .nclasses = MOCK_LOSS == 0 ? C : 0,
};

static const char *const param_names[3] = {"rec.a", "head.weight", "head.bias"};
static const char *const in_names[2] = {"x", "target"};
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
	return k >= 0 && k < 2 ? in_names[k] : NULL;
}

int mock_io_dtype(int is_output, int k)
{
	if (!mock_io_name(is_output, k))
		return -1;
	return !is_output && k == 1 && MOCK_LOSS == 0 ? 7 : 1;
}

int mock_io_rank(int is_output, int k)
{
	static const int in_rank[2] = {3, MOCK_LOSS == 0 ? 1 : 2}, out_rank[7] = {2, 0, 1, 2, 1, 3, 3};
	if (!mock_io_name(is_output, k))
		return -1;
	return is_output ? out_rank[k] : in_rank[k];
}

int mock_bind_dims(const int64_t *const *input_dims, mock_dims *d)
{
	if (!input_dims || !d || !input_dims[0] || !input_dims[1])
		return RT_ERR_ARG;
	d->seq = input_dims[0][0];
	d->batch = input_dims[0][1];
	if (d->seq < 1 || d->batch < 1 || input_dims[0][2] != I || input_dims[1][0] != d->batch ||
	    (MOCK_LOSS != 0 && input_dims[1][1] != C))
		return RT_ERR_SHAPE;
	return RT_OK;
}

int mock_io_shape(const mock_dims *d, int is_output, int k, int64_t *dims)
{
	if (!d || mock_io_rank(is_output, k) < 0)
		return RT_ERR_ARG;
	const int64_t T = d->seq, B = d->batch;
	if (!is_output) {
		if (k == 0)
			dims[0] = T, dims[1] = B, dims[2] = I;
		else if (MOCK_LOSS == 0)
			dims[0] = B;
		else
			dims[0] = B, dims[1] = C;
		return RT_OK;
	}
	switch (k) {
	case 0: dims[0] = B, dims[1] = C; break;
	case 1: break;
	case 2: dims[0] = I; break;
	case 3: dims[0] = C, dims[1] = I; break;
	case 4: dims[0] = C; break;
	default: dims[0] = T, dims[1] = B, dims[2] = I; break;
	}
	return RT_OK;
}

int mock_run_generic(mock *m, const mock_dims *d, const void *const *in, void *const *out)
{
	if (!m || !d || !in || !out || !in[0] || !in[1] || !out[0] || !out[1] || d->seq < 1 || d->batch < 1)
		return RT_ERR_ARG;
	const int64_t T = d->seq, B = d->batch;
	const float *x = in[0];
	float *logits = out[0], *loss = out[1];
	float *h = calloc((size_t)((T + 1) * B * I), sizeof *h);   /* h_0 .. h_T */
	double *dz = malloc(sizeof(double) * (size_t)(B * C));
	float *dh = malloc(sizeof(float) * (size_t)(B * I));
	if (!h || !dz || !dh) {
		free(h), free(dz), free(dh);
		return RT_ERR_NOMEM;
	}
	for (int64_t t = 1; t <= T; t++)
		for (int64_t j = 0; j < B * I; j++)
			h[t * B * I + j] = m->a[j % I] * h[(t - 1) * B * I + j] + x[(t - 1) * B * I + j];
	const float *hT = h + T * B * I;
	double L = 0;
	int st = RT_OK;
	for (int64_t b = 0; b < B; b++) {
		float *z = logits + b * C;
		for (int c = 0; c < C; c++) {
			double s = m->b[c];
			for (int i = 0; i < I; i++)
				s += (double)m->w[c * I + i] * hT[b * I + i];
			z[c] = (float)s;
		}
		if (MOCK_LOSS == 0) {
			int64_t y = ((const int64_t *)in[1])[b];
			if (y < 0 || y >= C) {
				st = RT_ERR_INDEX;
				break;
			}
			double mx = z[0], se = 0;
			for (int c = 1; c < C; c++)
				mx = fmax(mx, z[c]);
			for (int c = 0; c < C; c++)
				se += exp(z[c] - mx);
			L += mx + log(se) - z[y];
			for (int c = 0; c < C; c++)
				dz[b * C + c] = (exp(z[c] - mx) / se - (c == y)) / (double)B;
		} else {
			const float *y = (const float *)in[1] + b * C;
			for (int c = 0; c < C; c++) {
				double e = (double)z[c] - y[c];
				L += e * e / (double)(B * C);
				dz[b * C + c] = 2 * e / (double)(B * C);
			}
		}
	}
	if (st == RT_OK) {
		*loss = (float)(MOCK_LOSS == 0 ? L / (double)B : L);
		if (!m->forward_only) {
			float *ga = out[2], *gw = out[3], *gb = out[4], *gx = out[5], *ds = out[6];
			for (int c = 0; c < C; c++) {
				double sb = 0;
				for (int64_t b = 0; b < B; b++)
					sb += dz[b * C + c];
				gb[c] = (float)sb;
				for (int i = 0; i < I; i++) {
					double s = 0;
					for (int64_t b = 0; b < B; b++)
						s += dz[b * C + c] * hT[b * I + i];
					gw[c * I + i] = (float)s;
				}
			}
			for (int64_t b = 0; b < B; b++)
				for (int i = 0; i < I; i++) {
					double s = 0;
					for (int c = 0; c < C; c++)
						s += dz[b * C + c] * m->w[c * I + i];
					dh[b * I + i] = (float)s;
				}
			double da[I] = {0};
			for (int64_t t = T; t >= 1; t--) {
				const float *hp = h + (t - 1) * B * I;
				for (int64_t j = 0; j < B * I; j++) {
					ds[(t - 1) * B * I + j] = dh[j];
					gx[(t - 1) * B * I + j] = dh[j];
					da[j % I] += (double)dh[j] * hp[j];
					dh[j] *= m->a[j % I];
				}
			}
			for (int i = 0; i < I; i++)
				ga[i] = (float)da[i];
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
