/* rt_linalg.c: the kernels of ONNX Det, Einsum, DFT and STFT, for float32 and
 * float64 tensors (flag f64), every sum in double.
 *
 * Det factors each matrix by LU decomposition with partial pivoting (the
 * row of the largest magnitude in the column as pivot; a zero column gives
 * a determinant of 0).  Einsum is one loop nest over every label of the
 * equation: output labels outside, contracted ones inside, each operand
 * read through the stride its labels give (a label repeated in one operand
 * sums the strides of its axes: a diagonal).  DFT and STFT are the direct
 * O(n^2) sums, the angle of each term reduced modulo n before it is
 * scaled, so that long transforms lose no precision to large arguments.
 */
#include "cellrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double two_pi = 6.283185307179586476925286766559;

static double ld(const void *p, int f64, int64_t i)
{
	return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static void st(void *p, int f64, int64_t i, double v)
{
	if (f64)
		((double *)p)[i] = v;
	else
		((float *)p)[i] = (float)v;
}

/* ---- Det ------------------------------------------------------------------------- */

int rt_det(void *y, const void *x, int f64, int64_t batch, int64_t n)
{
	if (n < 0 || batch < 0)
		return RT_ERR_SHAPE;
	double *a = malloc((size_t)(n * n > 0 ? n * n : 1) * sizeof *a);
	if (!a)
		return RT_ERR_NOMEM;
	for (int64_t b = 0; b < batch; b++) {
		for (int64_t i = 0; i < n * n; i++)
			a[i] = ld(x, f64, b * n * n + i);
		double det = 1.0;
		for (int64_t c = 0; c < n && det != 0.0; c++) {
			int64_t p = c;
			for (int64_t r = c + 1; r < n; r++)
				if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
					p = r;
			if (a[p * n + c] == 0.0) {
				det = 0.0;
				break;
			}
			if (p != c) {
				for (int64_t k = 0; k < n; k++) {
					double t = a[c * n + k];
					a[c * n + k] = a[p * n + k];
					a[p * n + k] = t;
				}
				det = -det;
			}
			det *= a[c * n + c];
			for (int64_t r = c + 1; r < n; r++) {
				double f = a[r * n + c] / a[c * n + c];
				for (int64_t k = c; k < n; k++)
					a[r * n + k] -= f * a[c * n + k];
			}
		}
		st(y, f64, b, det);
	}
	free(a);
	return RT_OK;
}

/* ---- Einsum ---------------------------------------------------------------------- */

int rt_einsum(void *y, int f64, int nops, const void *const *x, const int *rank, const int64_t *dims,
	      const int *labels, int nlab, int nout)
{
	int64_t size[RT_EINSUM_MAXLAB], stride[RT_EINSUM_MAXOPS][RT_EINSUM_MAXLAB], idx[RT_EINSUM_MAXLAB];
	if (nops < 1 || nops > RT_EINSUM_MAXOPS || nlab < 0 || nlab > RT_EINSUM_MAXLAB || nout < 0 || nout > nlab)
		return RT_ERR_ARG;
	for (int l = 0; l < nlab; l++)
		size[l] = -1;
	for (int o = 0, at = 0; o < nops; o++) {
		int64_t s = 1;
		for (int l = 0; l < nlab; l++)
			stride[o][l] = 0;
		for (int a = rank[o] - 1; a >= 0; a--) {
			int l = labels[at + a];
			int64_t d = dims[at + a];
			if (l < 0 || l >= nlab || d < 0 || (size[l] >= 0 && size[l] != d))
				return RT_ERR_SHAPE;
			size[l] = d;
			stride[o][l] += s;
			s *= d;
		}
		at += rank[o];
	}
	int64_t nin = 1, ny = 1;
	for (int l = 0; l < nlab; l++) {
		if (size[l] < 0)
			return RT_ERR_SHAPE;       /* an output label no operand has */
		if (l < nout)
			ny *= size[l];
		else
			nin *= size[l];
	}
	memset(idx, 0, sizeof idx);
	for (int64_t i = 0; i < ny; i++) {
		double acc = 0.0;
		for (int l = nout; l < nlab; l++)
			idx[l] = 0;
		for (int64_t j = 0; j < nin; j++) {
			double p = 1.0;
			for (int o = 0; o < nops; o++) {
				int64_t off = 0;
				for (int l = 0; l < nlab; l++)
					off += idx[l] * stride[o][l];
				p *= ld(x[o], f64, off);
			}
			acc += p;
			for (int l = nlab - 1; l >= nout; l--) {
				if (++idx[l] < size[l])
					break;
				idx[l] = 0;
			}
		}
		st(y, f64, i, acc);
		for (int l = nout - 1; l >= 0; l--) {
			if (++idx[l] < size[l])
				break;
			idx[l] = 0;
		}
	}
	return RT_OK;
}

/* ---- DFT and STFT ---------------------------------------------------------------- */

/* One transform: n points of x (stride xs elements between points, cin
 * components each, the first len present and the rest zero), nbins bins
 * into y (stride ys, two components each); window w (NULL: none). */
static void dft_one(void *y, int64_t ys, const void *x, int f64, int64_t xs, int64_t cin, int64_t len,
		    const void *w, int64_t n, int64_t nbins, int inverse)
{
	double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
	int64_t m = len < n ? len : n;
	for (int64_t k = 0; k < nbins; k++) {
		double re = 0.0, im = 0.0;
		for (int64_t j = 0; j < m; j++) {
			double ang = sign * two_pi * (double)((j * k) % n) / (double)n;
			double c = cos(ang), s = sin(ang), wj = w ? ld(w, f64, j) : 1.0;
			double xr = ld(x, f64, j * xs) * wj, xi = cin == 2 ? ld(x, f64, j * xs + 1) * wj : 0.0;
			re += xr * c - xi * s;
			im += xr * s + xi * c;
		}
		st(y, f64, k * ys, re * scale);
		st(y, f64, k * ys + 1, im * scale);
	}
}

int rt_dft(void *y, const void *x, int f64, int64_t outer, int64_t len, int64_t inner, int64_t cin, int64_t n,
	   int64_t nbins, int inverse)
{
	if (outer < 0 || len < 0 || inner < 0 || (cin != 1 && cin != 2) || n < 1 || nbins < 0 || nbins > n)
		return RT_ERR_SHAPE;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			dft_one((char *)y + ((o * nbins * inner + i) * 2) * (f64 ? 8 : 4), inner * 2,
				(const char *)x + ((o * len * inner + i) * cin) * (f64 ? 8 : 4), f64, inner * cin, cin,
				len, NULL, n, nbins, inverse);
	return RT_OK;
}

int rt_stft(void *y, const void *x, int f64, int64_t batch, int64_t len, int64_t cin, int64_t step,
	    const void *window, int64_t n, int64_t frames, int64_t nbins)
{
	if (batch < 0 || (cin != 1 && cin != 2) || step < 1 || n < 1 || frames < 0 || nbins < 0 || nbins > n ||
	    (frames > 0 && (frames - 1) * step + n > len))
		return RT_ERR_SHAPE;
	size_t es = f64 ? 8 : 4;
	for (int64_t b = 0; b < batch; b++)
		for (int64_t f = 0; f < frames; f++)
			dft_one((char *)y + (size_t)((b * frames + f) * nbins * 2) * es, 2,
				(const char *)x + (size_t)((b * len + f * step) * cin) * es, f64, cin, cin, n, window, n,
				nbins, 0);
	return RT_OK;
}
