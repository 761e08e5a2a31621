/* fd_mock.c: a stand-in train build (mock/m.h) with a hand-derived gradient,
 * so that the `fd` group tests fd_check.c itself before any real train
 * build exists: the driver must pass this model's correct gradients and
 * fail when FD_MOCK_BUG names a tensor whose gradient is made wrong
 * (W: one element scaled by 1.1; b: a sign flipped; x: a term dropped).
 *
 *   y = tanh(x W + b)            x [B, I], W [I, O], b [O], y [B, O]
 *   loss = mean((y - target)^2)  over B*O elements
 *   dz = 2 (y - target) (1 - y^2) / (B O);  grad.W = x^T dz;
 *   grad.b = sum_B dz;  grad.x = dz W^T
 * The weights are fixed numbers (weights_path is ignored).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "m.h"

enum { I = 3, O = 4 };

struct m {
	float W[I * O];         /* [I, O] */
	float b[O];             /* [O] */
	int forward_only;
};

int m_create(m **out, const char *weights_path)
{
	(void)weights_path;
	m *p = calloc(1, sizeof *p);
	if (!p)
		return RT_ERR_NOMEM;
	for (int k = 0; k < I * O; k++)
		p->W[k] = (float)(0.7 * sin(1.3 * k + 0.4));
	for (int k = 0; k < O; k++)
		p->b[k] = (float)(0.3 * cos(2.1 * k));
	*out = p;
	return RT_OK;
}

void m_destroy(m *p) { free(p); }
const char *m_status_str(int status) { return rt_status_str(status); }

static const char *in_names[] = {"x", "target"};
static const char *out_names[] = {"y", "loss", "grad.W", "grad.b", "grad.x"};

const char *m_io_name(int is_output, int k)
{
	if (k < 0 || k >= (is_output ? m_NUM_OUTPUTS : m_NUM_INPUTS))
		return NULL;
	return is_output ? out_names[k] : in_names[k];
}

int m_io_dtype(int is_output, int k) { return m_io_name(is_output, k) ? 1 : -1; }

int m_io_rank(int is_output, int k)
{
	static const int in_rank[] = {2, 2}, out_rank[] = {2, 0, 2, 1, 2};
	if (!m_io_name(is_output, k))
		return -1;
	return is_output ? out_rank[k] : in_rank[k];
}

int m_bind_dims(const int64_t *const *input_dims, m_dims *d)
{
	if (input_dims[0][1] != I || input_dims[1][1] != O || input_dims[0][0] != input_dims[1][0] ||
	    input_dims[0][0] < 1)
		return RT_ERR_SHAPE;
	d->B = input_dims[0][0];
	return RT_OK;
}

int m_io_shape(const m_dims *d, int is_output, int k, int64_t *dims)
{
	if (!m_io_name(is_output, k))
		return RT_ERR_ARG;
	if (!is_output) {
		dims[0] = d->B;
		dims[1] = k == 0 ? I : O;
		return RT_OK;
	}
	switch (k) {
	case 0: dims[0] = d->B; dims[1] = O; break;
	case 1: break;
	case 2: dims[0] = I; dims[1] = O; break;
	case 3: dims[0] = O; break;
	default: dims[0] = d->B; dims[1] = I; break;
	}
	return RT_OK;
}

int m_param(m *p, int k, const char **name, float **data, int64_t *numel)
{
	if (k == 0) {
		*name = "W", *data = p->W, *numel = I * O;
	} else if (k == 1) {
		*name = "b", *data = p->b, *numel = O;
	} else {
		return RT_ERR_ARG;
	}
	return RT_OK;
}

int m_set_forward_only(m *p, int on)
{
	p->forward_only = on;
	return RT_OK;
}

int m_run_generic(m *p, const m_dims *d, const void *const *in, void *const *out)
{
	const float *x = in[0], *t = in[1];
	float *y = out[0], *loss = out[1];
	const char *bug = getenv("FD_MOCK_BUG");
	int64_t B = d->B;
	double L = 0;
	float *dz = malloc(sizeof(float) * (size_t)(B * O));
	if (!dz)
		return RT_ERR_NOMEM;
	for (int64_t r = 0; r < B; r++)
		for (int j = 0; j < O; j++) {
			double z = p->b[j];
			for (int i = 0; i < I; i++)
				z += (double)x[r * I + i] * p->W[i * O + j];
			double a = tanh(z), e = a - t[r * O + j];
			y[r * O + j] = (float)a;
			L += e * e;
			dz[r * O + j] = (float)(2 * e * (1 - a * a) / (double)(B * O));
		}
	loss[0] = (float)(L / (double)(B * O));
	if (!p->forward_only) {
		float *gW = out[2], *gb = out[3], *gx = out[4];
		for (int i = 0; i < I; i++)
			for (int j = 0; j < O; j++) {
				double s = 0;
				for (int64_t r = 0; r < B; r++)
					s += (double)x[r * I + i] * dz[r * O + j];
				gW[i * O + j] = (float)s;
			}
		for (int j = 0; j < O; j++) {
			double s = 0;
			for (int64_t r = 0; r < B; r++)
				s += dz[r * O + j];
			gb[j] = (float)s;
		}
		for (int64_t r = 0; r < B; r++)
			for (int i = 0; i < I; i++) {
				double s = 0;
				for (int j = 0; j < O; j++)
					if (!(bug && strcmp(bug, "x") == 0 && j == 1))
						s += (double)dz[r * O + j] * p->W[i * O + j];
				gx[r * I + i] = (float)s;
			}
		if (bug && strcmp(bug, "W") == 0) {
			int imax = 0;
			for (int k = 1; k < I * O; k++)
				if (fabsf(gW[k]) > fabsf(gW[imax]))
					imax = k;
			gW[imax] *= 1.1f;
		}
		if (bug && strcmp(bug, "b") == 0)
			gb[2] = -gb[2];
	}
	free(dz);
	return RT_OK;
}
