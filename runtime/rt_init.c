/* rt_init.c: seeded parameter initialisers (docs/cells.md section 6).
 *
 * The compiler fills the parameters of a .cell model that has no weights
 * file with these; the same seed gives the same numbers everywhere, since
 * everything is computed from a xoshiro256** stream (seeded by splitmix64)
 * in double precision and rounded to float at the end.  Orthogonal matrices
 * come from a Householder QR of a Gaussian matrix with the signs fixed as
 * torch.nn.init.orthogonal_ does; the echo-state scaling uses the spectral
 * radius from Gelfand's formula by repeated squaring (rt_spectral_radius),
 * not a power iteration on a vector, which does not converge for the complex
 * eigenvalue pairs a random non-symmetric matrix has.
 */
#include "cellrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rt_rng_seed(rt_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rt_rng_next(rt_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double rt_rng_uniform(rt_rng *r) { return (double)(rt_rng_next(r) >> 11) * 0x1.0p-53; }

double rt_rng_normal(rt_rng *r)
{
	/* Box-Muller, one value per call (the pair's second is dropped, so the
	 * stream position depends only on how many values were drawn) */
	double u1 = rt_rng_uniform(r), u2 = rt_rng_uniform(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

/* ---- simple initialisers -------------------------------------------------- */

void rt_init_const(float *w, int64_t n, float value)
{
	for (int64_t i = 0; i < n; i++)
		w[i] = value;
}

void rt_init_uniform(float *w, int64_t n, float bound, rt_rng *r)
{
	for (int64_t i = 0; i < n; i++)
		w[i] = (float)((2.0 * rt_rng_uniform(r) - 1.0) * bound);
}

void rt_init_normal(float *w, int64_t n, float std, rt_rng *r)
{
	for (int64_t i = 0; i < n; i++)
		w[i] = (float)(rt_rng_normal(r) * std);
}

void rt_init_eye(float *w, int64_t rows, int64_t cols)
{
	memset(w, 0, sizeof(float) * (size_t)(rows * cols));
	for (int64_t i = 0; i < rows && i < cols; i++)
		w[i * cols + i] = 1.0f;
}

void rt_init_kaiming_normal(float *w, int64_t rows, int64_t cols, rt_rng *r)
{
	rt_init_normal(w, rows * cols, (float)sqrt(2.0 / (double)(cols > 0 ? cols : 1)), r);
}

/* ---- orthogonal ------------------------------------------------------------ */

/* Householder QR of a [m, n] (m >= n, row-major, double): on return q [m, n]
 * has orthonormal columns with q * diag(sign(diag(R))) = Q's thin factor with
 * R's diagonal made positive, i.e. torch's sign fix. */
static void thin_q(double *a, int64_t m, int64_t n, double *q, double *v)
{
	double *d = v + m;      /* signs of R's diagonal: [n] */
	/* reflectors are applied to a in place; reflector k is kept in column k
	 * below the diagonal of a (v_k[k..m)) with its norm factor in beta */
	double *beta = d + n;
	for (int64_t k = 0; k < n; k++) {
		double norm = 0;
		for (int64_t i = k; i < m; i++)
			norm += a[i * n + k] * a[i * n + k];
		norm = sqrt(norm);
		double x0 = a[k * n + k];
		double alpha = x0 > 0 ? -norm : norm;     /* R[k][k] = alpha */
		d[k] = alpha < 0 ? -1.0 : 1.0;
		if (norm == 0) {
			beta[k] = 0;
			d[k] = 1.0;
			continue;
		}
		/* v = x - alpha e1, stored in a's column k (rows k..m) */
		a[k * n + k] = x0 - alpha;
		double vn = 0;
		for (int64_t i = k; i < m; i++)
			vn += a[i * n + k] * a[i * n + k];
		beta[k] = vn > 0 ? 2.0 / vn : 0;
		for (int64_t j = k + 1; j < n; j++) {
			double s = 0;
			for (int64_t i = k; i < m; i++)
				s += a[i * n + k] * a[i * n + j];
			s *= beta[k];
			for (int64_t i = k; i < m; i++)
				a[i * n + j] -= s * a[i * n + k];
		}
	}
	/* Q = H_0 H_1 ... H_{n-1} applied to the first n columns of I */
	memset(q, 0, sizeof(double) * (size_t)(m * n));
	for (int64_t i = 0; i < n; i++)
		q[i * n + i] = 1.0;
	for (int64_t k = n - 1; k >= 0; k--) {
		if (beta[k] == 0)
			continue;
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t i = k; i < m; i++)
				s += a[i * n + k] * q[i * n + j];
			s *= beta[k];
			for (int64_t i = k; i < m; i++)
				q[i * n + j] -= s * a[i * n + k];
		}
	}
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++)
			q[i * n + j] *= d[j];
}

int rt_init_orthogonal(float *w, int64_t rows, int64_t cols, float gain, rt_rng *r)
{
	if (rows <= 0 || cols <= 0)
		return RT_OK;
	/* as torch: flatten to [rows, cols]; work on the transpose when rows < cols */
	int tr = rows < cols;
	int64_t m = tr ? cols : rows, n = tr ? rows : cols;
	double *a = malloc(sizeof(double) * (size_t)(2 * m * n + m + 2 * n + 2));
	if (!a)
		return RT_ERR_NOMEM;
	double *q = a + m * n, *v = q + m * n;
	/* draw the Gaussian in w's own row-major order, then view it transposed */
	double *g = malloc(sizeof(double) * (size_t)(m * n));
	if (!g) {
		free(a);
		return RT_ERR_NOMEM;
	}
	for (int64_t i = 0; i < rows * cols; i++)
		g[i] = rt_rng_normal(r);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++)
			a[i * n + j] = tr ? g[j * cols + i] : g[i * n + j];
	thin_q(a, m, n, q, v);
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			w[i * cols + j] = (float)(gain * (tr ? q[j * n + i] : q[i * n + j]));
	free(g);
	free(a);
	return RT_OK;
}

/* ---- sparse and echo-state -------------------------------------------------- */

int rt_init_sparse(float *w, int64_t rows, int64_t cols, int nnz, rt_rng *r)
{
	memset(w, 0, sizeof(float) * (size_t)(rows * cols));
	if (cols <= 0)
		return RT_OK;
	int64_t k = nnz < cols ? nnz : cols;
	int64_t *perm = malloc(sizeof(int64_t) * (size_t)cols);
	if (!perm)
		return RT_ERR_NOMEM;
	for (int64_t i = 0; i < rows; i++) {
		/* the first k entries of a partial Fisher-Yates shuffle */
		for (int64_t j = 0; j < cols; j++)
			perm[j] = j;
		for (int64_t j = 0; j < k; j++) {
			int64_t p = j + (int64_t)(rt_rng_uniform(r) * (double)(cols - j));
			if (p >= cols)
				p = cols - 1;
			int64_t t = perm[j];
			perm[j] = perm[p];
			perm[p] = t;
			w[i * cols + perm[j]] = (float)rt_rng_normal(r);
		}
	}
	free(perm);
	return RT_OK;
}

/* Gelfand's formula, rho = lim ||A^k||^(1/k), with k = 2^40 reached by
 * repeated squaring of the normalised matrix in double: M_0 = A,
 * M_{j+1} = (M_j / s_j)^2 with s_j = ||M_j||_F, so that
 * log rho ~= sum_j log(s_j) / 2^j + log ||M_J|| / 2^J.  The constant and
 * polynomial (Jordan) factors of ||A^k|| vanish at this k, and complex
 * eigenvalue pairs do not disturb it, unlike a power iteration on a vector;
 * needs no LAPACK (libcellrt also builds without BLAS). */
double rt_spectral_radius(const float *w, int64_t n)
{
	if (n <= 0)
		return 0;
	size_t nn = (size_t)(n * n);
	double *m = malloc(2 * nn * sizeof(double));
	if (!m)
		return -1;
	double *t = m + nn, logr = 0, scale = 1.0;
	for (size_t i = 0; i < nn; i++)
		m[i] = w[i];
	for (int j = 0; j <= 40; j++) {
		double f = 0;
		for (size_t i = 0; i < nn; i++)
			f += m[i] * m[i];
		f = sqrt(f);
		if (f == 0) {   /* nilpotent: every eigenvalue is 0 */
			free(m);
			return 0;
		}
		logr += log(f) * scale;
		if (j == 40)
			break;
		for (size_t i = 0; i < nn; i++)
			m[i] /= f;
		for (int64_t i = 0; i < n; i++)
			for (int64_t c = 0; c < n; c++) {
				double s = 0;
				for (int64_t k = 0; k < n; k++)
					s += m[i * n + k] * m[k * n + c];
				t[i * n + c] = s;
			}
		memcpy(m, t, nn * sizeof(double));
		scale *= 0.5;
	}
	free(m);
	return exp(logr);
}

int rt_init_echo(float *w, int64_t n, int nnz, float radius, rt_rng *r)
{
	int st = rt_init_sparse(w, n, n, nnz, r);
	if (st != RT_OK)
		return st;
	double rho = rt_spectral_radius(w, n);
	if (rho < 0)
		return RT_ERR_NOMEM;
	if (rho == 0)
		return RT_OK;
	double scale = radius / rho;
	for (int64_t i = 0; i < n * n; i++)
		w[i] = (float)(w[i] * scale);
	return RT_OK;
}
