/* rt_ops.c: generic tensor kernels for emitted code -- data movement for any
 * element type (transpose, slice, concat/split rows, gather) and the float
 * softmax family.  Element-wise arithmetic is not here: the emitter prints it
 * as typed, fused loops in place.
 *
 * Data-movement kernels take the element size and copy elements through
 * fixed-size memcpy calls, which compilers turn into single loads and stores,
 * so one kernel serves every dtype without per-type copies of the code.
 * Every kernel is written as the straightforward loop nest it specifies
 * (cellrt.h), walking the output in row-major order with an odometer over
 * the outer axes and a strided inner loop; they are their own reference.
 */
#include "cellrt.h"

#include <math.h>
#include <string.h>

/* n elements from x (elements xstep apart) to consecutive y. */
static void copy_strided(char *y, const char *x, int64_t n, int64_t xstep, size_t esize)
{
	if (xstep == 1) {       /* a contiguous run */
		memcpy(y, x, (size_t)n * esize);
		return;
	}
	int64_t xb = xstep * (int64_t)esize;
	switch (esize) {
	case 1: for (int64_t i = 0; i < n; i++) memcpy(y + i, x + i * xb, 1); break;
	case 2: for (int64_t i = 0; i < n; i++) memcpy(y + 2 * i, x + i * xb, 2); break;
	case 4: for (int64_t i = 0; i < n; i++) memcpy(y + 4 * i, x + i * xb, 4); break;
	case 8: for (int64_t i = 0; i < n; i++) memcpy(y + 8 * i, x + i * xb, 8); break;
	default:
		for (int64_t i = 0; i < n; i++)
			memcpy(y + (size_t)i * esize, x + i * xb, esize);
	}
}

/* Row-major strides (in elements) of dims[rank]. */
static void strides_of(int64_t *st, const int64_t *dims, int rank)
{
	int64_t s = 1;
	for (int k = rank - 1; k >= 0; k--) {
		st[k] = s;
		s *= dims[k];
	}
}

static int64_t numel_of(const int64_t *dims, int rank)
{
	int64_t n = 1;
	for (int k = 0; k < rank; k++)
		n *= dims[k];
	return n;
}

/* Walks Y's index space in row-major order: for every run of the innermost
 * axis, copies ydims[rank-1] elements from X starting at offset base (in
 * elements) + sum over outer axes of idx[k] * xstep[k], elements xstep[rank-1]
 * apart.  Transpose and slice differ only in base and xstep.  Axes whose
 * runs follow one another in X as in Y (an outer step of the inner axis'
 * whole length: a slice of whole rows, a transpose that keeps the last
 * axes) are walked as one, so a copy of short rows is one long run. */
static void strided_walk(char *y, const char *x, size_t esize, int rank0, const int64_t *ydims0,
			int64_t base, const int64_t *xstep0)
{
	if (rank0 == 0) {
		memcpy(y, x + base * (int64_t)esize, esize);
		return;
	}
	int64_t total = numel_of(ydims0, rank0);
	if (total == 0)
		return;
	int64_t ydims[RT_TF_MAXRANK], xstep[RT_TF_MAXRANK];
	int rank = 0;
	for (int k = 0; k < rank0; k++) {
		if (rank > 0 && xstep[rank - 1] == xstep0[k] * ydims0[k]) {
			ydims[rank - 1] *= ydims0[k];
			xstep[rank - 1] = xstep0[k];
		} else {
			ydims[rank] = ydims0[k];
			xstep[rank++] = xstep0[k];
		}
	}
	int64_t idx[RT_TF_MAXRANK] = {0};
	int64_t n = ydims[rank - 1];
	for (int64_t done = 0; done < total; done += n) {
		int64_t off = base;
		for (int k = 0; k < rank - 1; k++)
			off += idx[k] * xstep[k];
		copy_strided(y + (size_t)done * esize, x + off * (int64_t)esize, n, xstep[rank - 1], esize);
		for (int k = rank - 2; k >= 0; k--) {
			if (++idx[k] < ydims[k])
				break;
			idx[k] = 0;
		}
	}
}

void rt_transpose(void *y, const void *x, size_t esize, int rank, const int64_t *xdims,
		  const int *perm)
{
	int64_t xst[RT_TF_MAXRANK], ydims[RT_TF_MAXRANK], step[RT_TF_MAXRANK];
	strides_of(xst, xdims, rank);
	for (int k = 0; k < rank; k++) {
		ydims[k] = xdims[perm[k]];
		step[k] = xst[perm[k]];
	}
	strided_walk(y, x, esize, rank, ydims, 0, step);
}

int64_t rt_slice_start(int64_t start, int64_t dim, int64_t step)
{
	if (start < 0)
		start += dim;
	if (step > 0)
		return start < 0 ? 0 : start > dim ? dim : start;
	return start > dim - 1 ? dim - 1 : start < 0 ? (dim > 0 ? 0 : -1) : start;
}

void rt_slice(void *y, const void *x, size_t esize, int rank, const int64_t *xdims,
	      const int64_t *ydims, const int64_t *start, const int64_t *step)
{
	int64_t xst[RT_TF_MAXRANK], xstep[RT_TF_MAXRANK], base = 0;
	strides_of(xst, xdims, rank);
	for (int k = 0; k < rank; k++) {
		xstep[k] = xst[k] * step[k];
		if (ydims[k] > 0)       /* an empty axis may have an out-of-range start */
			base += start[k] * xst[k];
	}
	strided_walk(y, x, esize, rank, ydims, base, xstep);
}

void rt_copy_rows(void *y, int64_t ldy, const void *x, int64_t ldx, int64_t rows, int64_t cols,
		  size_t esize)
{
	if (cols <= 0)
		return;
	for (int64_t r = 0; r < rows; r++)
		memcpy((char *)y + (size_t)(r * ldy) * esize, (const char *)x + (size_t)(r * ldx) * esize,
		       (size_t)cols * esize);
}

static int64_t index_at(const void *idx, int idx_dtype, int64_t j)
{
	return idx_dtype == 6 ? ((const int32_t *)idx)[j] : ((const int64_t *)idx)[j];
}

int rt_gather(void *y, const void *x, size_t esize, int64_t outer, int64_t n, int64_t inner,
	      const void *idx, int idx_dtype, int64_t nidx)
{
	if (idx_dtype != 6 && idx_dtype != 7)
		return RT_ERR_ARG;
	/* Check every index before writing anything: Y stays untouched on error. */
	for (int64_t j = 0; j < nidx; j++) {
		int64_t i = index_at(idx, idx_dtype, j);
		if (i < -n || i >= n)
			return RT_ERR_INDEX;
	}
	size_t row = (size_t)inner * esize;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < nidx; j++) {
			int64_t i = index_at(idx, idx_dtype, j);
			if (i < 0)
				i += n;
			memcpy((char *)y + (size_t)(o * nidx + j) * row,
			       (const char *)x + (size_t)(o * n + i) * row, row);
		}
	return RT_OK;
}

/* Softmax along the middle axis; take_log selects LogSoftmax.  The sum is kept in
 * double: for long axes it is the only source of error worth removing.
 * Defined once per element type T (softmax_f32, softmax_f64). */
#define SOFTMAX_AXIS(NAME, T)                                                                      \
	static void NAME(T *y, const T *x, int64_t outer, int64_t n, int64_t inner, int take_log)  \
	{                                                                                          \
		for (int64_t o = 0; o < outer; o++)                                                \
			for (int64_t i = 0; i < inner; i++) {                                      \
				const T *xp = x + o * n * inner + i;                               \
				T *yp = y + o * n * inner + i;                                     \
				T mx = -INFINITY;                                                  \
				for (int64_t k = 0; k < n; k++)                                    \
					mx = xp[k * inner] > mx ? xp[k * inner] : mx;              \
				double sum = 0;                                                    \
				for (int64_t k = 0; k < n; k++)                                    \
					sum += exp((double)xp[k * inner] - mx);                    \
				double lse = mx + log(sum);                                        \
				for (int64_t k = 0; k < n; k++)                                    \
					yp[k * inner] = (T)(take_log ? xp[k * inner] - lse         \
								     : exp((double)xp[k * inner] - mx) / sum); \
			}                                                                          \
	}
SOFTMAX_AXIS(softmax_f32, float)
SOFTMAX_AXIS(softmax_f64, double)
#undef SOFTMAX_AXIS

void rt_softmax(float *y, const float *x, int64_t outer, int64_t n, int64_t inner)
{
	softmax_f32(y, x, outer, n, inner, 0);
}

void rt_log_softmax(float *y, const float *x, int64_t outer, int64_t n, int64_t inner)
{
	softmax_f32(y, x, outer, n, inner, 1);
}

void rt_softmax_f64(double *y, const double *x, int64_t outer, int64_t n, int64_t inner)
{
	softmax_f64(y, x, outer, n, inner, 0);
}

void rt_log_softmax_f64(double *y, const double *x, int64_t outer, int64_t n, int64_t inner)
{
	softmax_f64(y, x, outer, n, inner, 1);
}
