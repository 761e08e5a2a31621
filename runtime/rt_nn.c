/* rt_nn.c: the kernels of the ONNX operators that are neither element-wise
 * nor recurrent: N-D convolution (Conv), padding (Pad), reductions over any
 * set of axes (ReduceSum .. ReduceLogSumExp) and ArgMax/ArgMin, pooling
 * and MaxUnpool, the normalisations (LayerNormalization, BatchNormalization,
 * InstanceNormalization, LRN, MeanVarianceNormalization) and the indexing
 * kernels.
 *
 * rt_conv lowers each group of a convolution to products: the input patches
 * of a tile of output positions are copied into a column buffer on the stack
 * (im2col, RT_CONV_TILE floats, so no allocation) and one rt_sgemm per tile
 * multiplies the group's filters [M/g, C/g * K] by them, writing straight
 * into Y (a tile of fewer than 16 positions: the product transposed, so that
 * the filters fill the vectors; a depthwise convolution: a direct loop).
 * The offsets of the taps are tabled once per call when they fit.  Stack:
 * 64 KiB at most.  rt_conv_ref is the textbook loop nest the unit tests
 * compare it with.  Reductions walk the kept axes and, for each output element, the
 * reduced ones, in double.  The gradient kernels (rt_conv_grad_x/w,
 * rt_pad_grad, rt_class_loss_grad) walk the same index maps as the forward
 * ones, read the other way.  All tensors are dense row-major.
 */
#include "cellrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* floats of the im2col buffer: 32 KiB of stack (with the table of taps and
 * the transposed tile, 64 KiB), 4 KiB (8 KiB) on a microcontroller, whose
 * RAM is that small; a column of more taps than the buffer takes the
 * reference loop */
#if RT_BARE_METAL
enum { RT_CONV_TILE = 1024 };
#else
enum { RT_CONV_TILE = 8192 };
#endif

/* Output size of one spatial axis. */
static int64_t conv_out(int64_t d, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t dil)
{
	int64_t span = dil * (k - 1) + 1;
	return d + pb + pe < span ? 0 : (d + pb + pe - span) / s + 1;
}

/* Spatial geometry shared by the two convolutions. */
typedef struct conv_geo {
	int nsp;
	int64_t in[RT_TF_MAXRANK], out[RT_TF_MAXRANK], k[RT_TF_MAXRANK];
	int64_t s[RT_TF_MAXRANK], pb[RT_TF_MAXRANK], dil[RT_TF_MAXRANK];
	int64_t nin, nout, nk;          /* products of in, out, k */
} conv_geo;

static void conv_geo_init(conv_geo *G, int nsp, const int64_t *xdims, const int64_t *kdims,
			  const int64_t *strides, const int64_t *pads, const int64_t *dil)
{
	G->nsp = nsp;
	G->nin = G->nout = G->nk = 1;
	for (int a = 0; a < nsp; a++) {
		G->in[a] = xdims[2 + a];
		G->k[a] = kdims[a];
		G->s[a] = strides[a];
		G->pb[a] = pads[a];
		G->dil[a] = dil[a];
		G->out[a] = conv_out(G->in[a], G->k[a], G->s[a], pads[a], pads[nsp + a], G->dil[a]);
		G->nin *= G->in[a];
		G->nout *= G->out[a];
		G->nk *= G->k[a];
	}
}

/* Flat input offset of the tap at kernel index kk for output position p, or
 * -1 in the padding. */
static int64_t conv_tap(const conv_geo *G, int64_t p, int64_t kk)
{
	int64_t off = 0;
	int64_t pc[RT_TF_MAXRANK], kc[RT_TF_MAXRANK];
	for (int a = G->nsp - 1; a >= 0; a--) {
		pc[a] = p % G->out[a];
		p /= G->out[a];
		kc[a] = kk % G->k[a];
		kk /= G->k[a];
	}
	for (int a = 0; a < G->nsp; a++) {
		int64_t i = pc[a] * G->s[a] - G->pb[a] + kc[a] * G->dil[a];
		if (i < 0 || i >= G->in[a])
			return -1;
		off = off * G->in[a] + i;
	}
	return off;
}

/* rt_conv (float) and rt_conv_f64 (double): one im2col kernel, rt_conv_tmpl.h. */
#define CT float
#define CONV rt_conv
#define GEMM rt_sgemm
#define CTILE RT_CONV_TILE
#include "rt_conv_tmpl.h"
#define CT double
#define CONV rt_conv_f64
#define GEMM rt_dgemm
#define CTILE (RT_CONV_TILE / 2)
#include "rt_conv_tmpl.h"

void rt_conv_ref(float *y, const float *x, const float *w, const float *b, int nsp, const int64_t *xdims,
		 int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		 const int64_t *dil)
{
	conv_geo G;
	conv_geo_init(&G, nsp, xdims, kdims, strides, pads, dil);
	int64_t n = xdims[0], c = xdims[1], cg = c / group, mg = m / group;
	for (int64_t b0 = 0; b0 < n; b0++)
		for (int64_t o = 0; o < m; o++) {
			int64_t g = o / mg;
			for (int64_t p = 0; p < G.nout; p++) {
				double acc = b ? b[o] : 0.0;
				for (int64_t ch = 0; ch < cg; ch++)
					for (int64_t kk = 0; kk < G.nk; kk++) {
						int64_t t = conv_tap(&G, p, kk);
						if (t >= 0)
							acc += (double)w[(o * cg + ch) * G.nk + kk] *
							       x[(b0 * c + g * cg + ch) * G.nin + t];
					}
				y[(b0 * m + o) * G.nout + p] = (float)acc;
			}
		}
}

/* The adjoints of rt_conv: the same taps, read the other way. */
void rt_conv_grad_x(float *dx, const float *dy, const float *w, int nsp, const int64_t *xdims, int64_t m,
		    int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		    const int64_t *dil)
{
	conv_geo G;
	conv_geo_init(&G, nsp, xdims, kdims, strides, pads, dil);
	int64_t n = xdims[0], c = xdims[1], cg = c / group, mg = m / group;
	memset(dx, 0, (size_t)(n * c * G.nin) * sizeof *dx);
	for (int64_t b0 = 0; b0 < n; b0++)
		for (int64_t o = 0; o < m; o++) {
			int64_t g = o / mg;
			const float *dyo = dy + (b0 * m + o) * G.nout;
			for (int64_t ch = 0; ch < cg; ch++) {
				const float *wr = w + (o * cg + ch) * G.nk;
				float *dxc = dx + (b0 * c + g * cg + ch) * G.nin;
				for (int64_t p = 0; p < G.nout; p++)
					for (int64_t kk = 0; kk < G.nk; kk++) {
						int64_t t = conv_tap(&G, p, kk);
						if (t >= 0)
							dxc[t] += wr[kk] * dyo[p];
					}
			}
		}
}

void rt_conv_grad_w(float *dw, const float *dy, const float *x, int nsp, const int64_t *xdims, int64_t m,
		    int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		    const int64_t *dil)
{
	conv_geo G;
	conv_geo_init(&G, nsp, xdims, kdims, strides, pads, dil);
	int64_t n = xdims[0], c = xdims[1], cg = c / group, mg = m / group;
	for (int64_t o = 0; o < m; o++) {
		int64_t g = o / mg;
		for (int64_t ch = 0; ch < cg; ch++)
			for (int64_t kk = 0; kk < G.nk; kk++) {
				double acc = 0;
				for (int64_t b0 = 0; b0 < n; b0++) {
					const float *dyo = dy + (b0 * m + o) * G.nout;
					const float *xc = x + (b0 * c + g * cg + ch) * G.nin;
					for (int64_t p = 0; p < G.nout; p++) {
						int64_t t = conv_tap(&G, p, kk);
						if (t >= 0)
							acc += (double)dyo[p] * xc[t];
					}
				}
				dw[(o * cg + ch) * G.nk + kk] = (float)acc;
			}
	}
}

/* ---- Pad ------------------------------------------------------------------- */

/* The source index of output index o on an axis of size d padded by pb in
 * front, or -1 for the constant. */
static int64_t pad_src(int64_t o, int64_t d, int64_t pb, int mode)
{
	int64_t i = o - pb;
	if (i >= 0 && i < d)
		return i;
	if (mode == RT_PAD_CONSTANT || d == 0)
		return -1;
	if (mode == RT_PAD_EDGE || d == 1)
		return i < 0 ? 0 : d - 1;
	/* reflect about the first and last elements (period 2d - 2) */
	int64_t per = 2 * d - 2;
	i %= per;
	if (i < 0)
		i += per;
	return i < d ? i : per - i;
}

/* The element of X that output coordinates c read through the padding
 * (row-major offset), or -1 where they read the constant. */
static int64_t pad_offset(const int64_t *c, const int64_t *xdims, const int64_t *pads, int rank, int mode)
{
	int64_t off = 0;
	for (int a = 0; a < rank; a++) {
		int64_t s = pad_src(c[a], xdims[a], pads[a], mode);
		if (s < 0)
			return -1;
		off = off * xdims[a] + s;
	}
	return off;
}

void rt_pad(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const int64_t *pads,
	    int mode, const void *value)
{
	int64_t yd[RT_TF_MAXRANK], c[RT_TF_MAXRANK] = {0}, total = 1;
	for (int a = 0; a < rank; a++) {
		yd[a] = xdims[a] + pads[a] + pads[rank + a];
		total *= yd[a];
	}
	char *out = y;
	for (int64_t i = 0; i < total; i++) {
		int64_t off = pad_offset(c, xdims, pads, rank, mode);
		if (off >= 0)
			memcpy(out + (size_t)i * esize, (const char *)x + (size_t)off * esize, esize);
		else if (value)
			memcpy(out + (size_t)i * esize, value, esize);
		else
			memset(out + (size_t)i * esize, 0, esize);
		for (int a = rank - 1; a >= 0; a--) {
			if (++c[a] < yd[a])
				break;
			c[a] = 0;
		}
	}
}

void rt_pad_grad(float *dx, const float *dy, int rank, const int64_t *xdims, const int64_t *pads, int mode)
{
	int64_t yd[RT_TF_MAXRANK], c[RT_TF_MAXRANK] = {0}, total = 1, xn = 1;
	for (int a = 0; a < rank; a++) {
		yd[a] = xdims[a] + pads[a] + pads[rank + a];
		total *= yd[a];
		xn *= xdims[a];
	}
	memset(dx, 0, (size_t)xn * sizeof *dx);
	for (int64_t i = 0; i < total; i++) {
		int64_t off = pad_offset(c, xdims, pads, rank, mode);
		if (off >= 0)
			dx[off] += dy[i];
		for (int a = rank - 1; a >= 0; a--) {
			if (++c[a] < yd[a])
				break;
			c[a] = 0;
		}
	}
}

/* ---- reductions -------------------------------------------------------------- */

/* The geometry of a reduction: row-major strides st of X, the number of
 * reduced elements per output (*nred) and of outputs (*nout). */
static void reduce_geometry(int rank, const int64_t *xdims, const unsigned char *red, int64_t *st, int64_t *nred,
			    int64_t *nout)
{
	int64_t m = 1;
	for (int a = rank - 1; a >= 0; a--) {
		st[a] = m;
		m *= xdims[a];
	}
	*nred = *nout = 1;
	for (int a = 0; a < rank; a++) {
		if (red[a])
			*nred *= xdims[a];
		else
			*nout *= xdims[a];
	}
}

/* Advances the odometer c over the axes a whose red[a] is `reduced`. */
static void reduce_next(int64_t *c, int rank, const int64_t *xdims, const unsigned char *red, int reduced)
{
	for (int a = rank - 1; a >= 0; a--) {
		if (!red[a] != !reduced)
			continue;
		if (++c[a] < xdims[a])
			break;
		c[a] = 0;
	}
}

/* The offset in X of the element at odometer c (over all axes). */
static int64_t reduce_offset(const int64_t *c, const int64_t *st, int rank, int64_t base)
{
	for (int a = 0; a < rank; a++)
		base += c[a] * st[a];
	return base;
}

/* One output element from the reduced elements x[base + sum c_a * st_a]
 * (oc: the kept axes' odometer, rc: the reduced ones'). */
#define REDUCE_BODY(T)                                                                             \
	int64_t st[RT_TF_MAXRANK], oc[RT_TF_MAXRANK] = {0}, nred, nout;                            \
	reduce_geometry(rank, xdims, red, st, &nred, &nout);                                       \
	for (int64_t o = 0; o < nout; o++, reduce_next(oc, rank, xdims, red, 0)) {                 \
		int64_t base = reduce_offset(oc, st, rank, 0), rc[RT_TF_MAXRANK] = {0};            \
		double acc = kind == RT_REDUCE_MAX ? -INFINITY : kind == RT_REDUCE_MIN ? INFINITY \
			   : kind == RT_REDUCE_PROD ? 1.0 : 0.0;                                   \
		double top = -INFINITY;                                                            \
		if (kind == RT_REDUCE_LOGSUMEXP) {                                                 \
			int64_t c2[RT_TF_MAXRANK] = {0};                                           \
			for (int64_t r = 0; r < nred; r++, reduce_next(c2, rank, xdims, red, 1)) { \
				double v = (double)x[reduce_offset(c2, st, rank, base)];           \
				top = v > top ? v : top;                                           \
			}                                                                          \
			if (!isfinite(top))                                                        \
				top = 0;                                                           \
		}                                                                                  \
		for (int64_t r = 0; r < nred; r++, reduce_next(rc, rank, xdims, red, 1)) {         \
			double v = (double)x[reduce_offset(rc, st, rank, base)];                   \
			switch (kind) {                                                            \
			case RT_REDUCE_MAX: acc = v > acc || v != v ? v : acc; break;              \
			case RT_REDUCE_MIN: acc = v < acc || v != v ? v : acc; break;              \
			case RT_REDUCE_PROD: acc *= v; break;                                      \
			case RT_REDUCE_L1: acc += fabs(v); break;                                  \
			case RT_REDUCE_L2: case RT_REDUCE_SUMSQUARE: acc += v * v; break;          \
			case RT_REDUCE_LOGSUMEXP: acc += exp(v - top); break;                      \
			default: acc += v; break;                                                  \
			}                                                                          \
		}                                                                                  \
		switch (kind) {                                                                    \
		case RT_REDUCE_MEAN: acc /= (double)nred; break;                                   \
		case RT_REDUCE_L2: acc = sqrt(acc); break;                                         \
		case RT_REDUCE_LOGSUM: acc = log(acc); break;                                      \
		case RT_REDUCE_LOGSUMEXP: acc = log(acc) + top; break;                             \
		default: break;                                                                    \
		}                                                                                  \
		y[o] = (T)acc;                                                                     \
	}

void rt_reduce_f32(int kind, float *y, const float *x, int rank, const int64_t *xdims, const unsigned char *red)
{
	REDUCE_BODY(float)
}

void rt_reduce_f64(int kind, double *y, const double *x, int rank, const int64_t *xdims,
		   const unsigned char *red)
{
	REDUCE_BODY(double)
}

/* Integer reductions, exact: the accumulator is the element type U
 * unsigned, so that sums and products wrap modulo 2^bits as ONNX
 * Runtime's do, without undefined overflow. */
#define REDUCE_INT_BODY(T, U)                                                                      \
	int64_t st[RT_TF_MAXRANK], oc[RT_TF_MAXRANK] = {0}, nred, nout;                            \
	reduce_geometry(rank, xdims, red, st, &nred, &nout);                                       \
	for (int64_t o = 0; o < nout; o++, reduce_next(oc, rank, xdims, red, 0)) {                 \
		int64_t base = reduce_offset(oc, st, rank, 0), rc[RT_TF_MAXRANK] = {0};            \
		U acc = kind == RT_REDUCE_PROD ? 1u : 0u;                                          \
		T best = 0;                                                                        \
		for (int64_t r = 0; r < nred; r++, reduce_next(rc, rank, xdims, red, 1)) {         \
			T v = x[reduce_offset(rc, st, rank, base)];                                \
			U uv = (U)v;                                                               \
			switch (kind) {                                                            \
			case RT_REDUCE_MAX: best = r == 0 || v > best ? v : best; break;           \
			case RT_REDUCE_MIN: best = r == 0 || v < best ? v : best; break;           \
			case RT_REDUCE_PROD: acc *= uv; break;                                     \
			case RT_REDUCE_L1: acc += v < 0 ? (U)0 - uv : uv; break;                   \
			case RT_REDUCE_SUMSQUARE: acc += uv * uv; break;                           \
			default: acc += uv; break;                                                 \
			}                                                                          \
		}                                                                                  \
		if (kind == RT_REDUCE_MAX || kind == RT_REDUCE_MIN)                                \
			y[o] = best;                                                               \
		else                                                                               \
			memcpy(&y[o], &acc, sizeof acc);                                           \
	}

void rt_reduce_i64(int kind, int64_t *y, const int64_t *x, int rank, const int64_t *xdims,
		   const unsigned char *red)
{
	REDUCE_INT_BODY(int64_t, uint64_t)
}

void rt_reduce_i32(int kind, int32_t *y, const int32_t *x, int rank, const int64_t *xdims,
		   const unsigned char *red)
{
	REDUCE_INT_BODY(int32_t, uint32_t)
}

#define ARG_BODY                                                                                   \
	for (int64_t o = 0; o < outer; o++)                                                        \
		for (int64_t i = 0; i < inner; i++) {                                              \
			int64_t best = 0;                                                          \
			for (int64_t j = 1; j < n; j++) {                                          \
				double v = (double)x[(o * n + j) * inner + i];                     \
				double b = (double)x[(o * n + best) * inner + i];                  \
				int better = is_min ? v < b : v > b;                               \
				if (better || (last && v == b))                                    \
					best = j;                                                  \
			}                                                                          \
			y[o * inner + i] = best;                                                   \
		}

void rt_argmax_f32(int64_t *y, const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int last)
{
	ARG_BODY
}

void rt_argmax_f64(int64_t *y, const double *x, int64_t outer, int64_t n, int64_t inner, int is_min, int last)
{
	ARG_BODY
}

/* ---- pooling ------------------------------------------------------------------ */

/* rt_pool's body for the element type T (float, double); windows summed in
 * double. */
#define POOL_BODY(T)                                                                                \
	int64_t nc = xdims[0] * xdims[1], nin = 1, nout = 1, nk = 1;                                \
	for (int a = 0; a < nsp; a++) {                                                             \
		nin *= xdims[2 + a];                                                                \
		nout *= ysp[a];                                                                     \
		nk *= k[a];                                                                         \
	}                                                                                           \
	for (int64_t plane = 0; plane < nc; plane++) {                                              \
		const T *xp = x + plane * nin;                                                      \
		for (int64_t p = 0; p < nout; p++) {                                                \
			int64_t pc[RT_TF_MAXRANK], q = p;                                           \
			for (int a = nsp - 1; a >= 0; a--) {                                        \
				pc[a] = q % ysp[a];                                                 \
				q /= ysp[a];                                                        \
			}                                                                           \
			double acc = kind == RT_POOL_MAX || kind == RT_POOL_MAX_CM ? -INFINITY : 0.0; \
			int64_t best = -1, cnt = 0, padded = 0;                                     \
			for (int64_t kk = 0; kk < nk; kk++) {                                       \
				int64_t off = 0, cm = 0, cms = 1, r = kk, kc[RT_TF_MAXRANK];        \
				int in = 1, inpad = 1;                                              \
				for (int a = nsp - 1; a >= 0; a--) {                                \
					kc[a] = r % k[a];                                           \
					r /= k[a];                                                  \
				}                                                                   \
				for (int a = 0; a < nsp; a++) {                                     \
					int64_t i = pc[a] * st[a] - pads[a] + kc[a] * dil[a];       \
					in &= i >= 0 && i < xdims[2 + a];                           \
					inpad &= i >= -pads[a] && i < xdims[2 + a] + pads[nsp + a]; \
					off = off * xdims[2 + a] + i;                               \
					cm += i * cms;                                              \
					cms *= xdims[2 + a];                                        \
				}                                                                   \
				padded += inpad;                                                    \
				if (!in)                                                            \
					continue;                                                   \
				double v = xp[off];                                                 \
				cnt++;                                                              \
				if (kind == RT_POOL_MAX || kind == RT_POOL_MAX_CM) {                \
					if (best < 0 || v > acc) {                                  \
						acc = v;                                            \
						best = kind == RT_POOL_MAX ? off : cm;              \
					}                                                           \
				} else {                                                            \
					acc += v;                                                   \
				}                                                                   \
			}                                                                           \
			if (kind == RT_POOL_AVG)                                                    \
				acc = cnt ? acc / (double)cnt : 0.0;                                \
			else if (kind == RT_POOL_AVG_PADS)                                          \
				acc = padded ? acc / (double)padded : 0.0;                          \
			y[plane * nout + p] = (T)acc;                                               \
			if (idx)                                                                    \
				idx[plane * nout + p] = best < 0 ? -1 : plane * nin + best;         \
		}                                                                                   \
	}

void rt_pool(int kind, float *y, int64_t *idx, const float *x, int nsp, const int64_t *xdims, const int64_t *ysp,
	     const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil)
{
	POOL_BODY(float)
}

void rt_pool_f64(int kind, double *y, int64_t *idx, const double *x, int nsp, const int64_t *xdims,
		 const int64_t *ysp, const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil)
{
	POOL_BODY(double)
}

/* ---- normalisation ---------------------------------------------------------------- */

/* The bodies of rt_layernorm and rt_batchnorm for the element type T (the
 * statistics in double). */
#define LAYERNORM_BODY(T)                                                                           \
	for (int64_t o = 0; o < outer; o++) {                                                       \
		const T *xr = x + o * inner;                                                        \
		double m = 0, v = 0;                                                                \
		for (int64_t i = 0; i < inner; i++)                                                 \
			m += xr[i];                                                                 \
		m = inner ? m / (double)inner : 0.0;                                                \
		for (int64_t i = 0; i < inner; i++)                                                 \
			v += (xr[i] - m) * (xr[i] - m);                                             \
		v = inner ? v / (double)inner : 0.0;                                                \
		double inv = 1.0 / sqrt(v + (double)eps);                                           \
		for (int64_t i = 0; i < inner; i++)                                                 \
			y[o * inner + i] = (T)((xr[i] - m) * inv * scale[i] + (bias ? bias[i] : 0)); \
		if (mean)                                                                           \
			mean[o] = (T)m;                                                             \
		if (invstd)                                                                         \
			invstd[o] = (T)inv;                                                         \
	}
#define BATCHNORM_BODY(T)                                                                           \
	for (int64_t ch = 0; ch < c; ch++) {                                                        \
		double s = scale[ch] / sqrt((double)var[ch] + (double)eps), t = bias[ch] - mean[ch] * s; \
		for (int64_t b = 0; b < n; b++)                                                     \
			for (int64_t i = 0; i < inner; i++)                                         \
				y[(b * c + ch) * inner + i] = (T)(x[(b * c + ch) * inner + i] * s + t); \
	}

void rt_layernorm(float *y, float *mean, float *invstd, const float *x, const float *scale, const float *bias,
		  int64_t outer, int64_t inner, float eps)
{
	LAYERNORM_BODY(float)
}

void rt_layernorm_f64(double *y, double *mean, double *invstd, const double *x, const double *scale,
		      const double *bias, int64_t outer, int64_t inner, float eps)
{
	LAYERNORM_BODY(double)
}

void rt_batchnorm(float *y, const float *x, const float *scale, const float *bias, const float *mean,
		  const float *var, int64_t n, int64_t c, int64_t inner, float eps)
{
	BATCHNORM_BODY(float)
}

void rt_batchnorm_f64(double *y, const double *x, const double *scale, const double *bias, const double *mean,
		      const double *var, int64_t n, int64_t c, int64_t inner, float eps)
{
	BATCHNORM_BODY(double)
}

void rt_batchnorm_train(float *y, float *run_mean, float *run_var, const float *x, const float *scale,
			const float *bias, const float *mean, const float *var, int64_t n, int64_t c, int64_t inner,
			float eps, float momentum)
{
	double cnt = (double)n * (double)inner;
	for (int64_t ch = 0; ch < c; ch++) {
		double sum = 0, sq = 0;
		for (int64_t b = 0; b < n; b++)
			for (int64_t i = 0; i < inner; i++)
				sum += x[(b * c + ch) * inner + i];
		double mu = cnt > 0 ? sum / cnt : 0;
		for (int64_t b = 0; b < n; b++)
			for (int64_t i = 0; i < inner; i++) {
				double e = x[(b * c + ch) * inner + i] - mu;
				sq += e * e;
			}
		double v = cnt > 0 ? sq / cnt : 0;
		double s = scale[ch] / sqrt(v + (double)eps), t = bias[ch] - mu * s;
		for (int64_t b = 0; b < n; b++)
			for (int64_t i = 0; i < inner; i++)
				y[(b * c + ch) * inner + i] = (float)(x[(b * c + ch) * inner + i] * s + t);
		if (run_mean)
			run_mean[ch] = (float)(mean[ch] * (double)momentum + mu * (1.0 - (double)momentum));
		if (run_var)
			run_var[ch] = (float)(var[ch] * (double)momentum + v * (1.0 - (double)momentum));
	}
}

/* ---- Tile, GatherElements ------------------------------------------------------ */

void rt_tile(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const int64_t *reps)
{
	int64_t yd[RT_TF_MAXRANK], c[RT_TF_MAXRANK] = {0}, total = 1;
	for (int a = 0; a < rank; a++) {
		yd[a] = xdims[a] * reps[a];
		total *= yd[a];
	}
	for (int64_t i = 0; i < total; i++) {
		int64_t off = 0;
		for (int a = 0; a < rank; a++)
			off = off * xdims[a] + c[a] % xdims[a];
		memcpy((char *)y + (size_t)i * esize, (const char *)x + (size_t)off * esize, esize);
		for (int a = rank - 1; a >= 0; a--) {
			if (++c[a] < yd[a])
				break;
			c[a] = 0;
		}
	}
}

int rt_gather_elements(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const void *idx,
		       int idx_dtype, const int64_t *idims, int axis)
{
	int64_t c[RT_TF_MAXRANK] = {0}, total = 1;
	for (int a = 0; a < rank; a++)
		total *= idims[a];
	for (int64_t i = 0; i < total; i++) {
		int64_t j = idx_dtype == 6 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
		if (j < -xdims[axis] || j >= xdims[axis])
			return RT_ERR_INDEX;
		if (j < 0)
			j += xdims[axis];
		int64_t off = 0;
		for (int a = 0; a < rank; a++)
			off = off * xdims[a] + (a == axis ? j : c[a]);
		memcpy((char *)y + (size_t)i * esize, (const char *)x + (size_t)off * esize, esize);
		for (int a = rank - 1; a >= 0; a--) {
			if (++c[a] < idims[a])
				break;
			c[a] = 0;
		}
	}
	return RT_OK;
}

/* ---- ReverseSequence, TfIdfVectorizer ------------------------------------------------ */

int rt_reverse_sequence(void *y, const void *x, size_t esize, int64_t steps, int64_t batch, int64_t inner,
			int time_axis, const int64_t *lens)
{
	size_t row = (size_t)inner * esize;
	for (int64_t b = 0; b < batch; b++) {
		int64_t len = lens[b];
		if (len < 0 || len > steps)
			return RT_ERR_INDEX;
		for (int64_t t = 0; t < steps; t++) {
			int64_t from = t < len ? len - 1 - t : t;
			int64_t yo = time_axis == 0 ? t * batch + b : b * steps + t;
			int64_t xo = time_axis == 0 ? from * batch + b : b * steps + from;
			memcpy((char *)y + (size_t)yo * row, (const char *)x + (size_t)xo * row, row);
		}
	}
	return RT_OK;
}

/* The number of the n-gram of x[p], x[p + d], .. (n ids) in the pool, or -1. */
static int64_t tfidf_find(const void *x, int x_i32, int64_t p, int64_t d, int64_t n, const int64_t *pool,
			  int64_t npool, const int64_t *levels, int nlevels)
{
	if (n > nlevels)
		return -1;
	int64_t first = 0;      /* n-grams before level n */
	for (int k = 0; k < n - 1; k++)
		first += ((k + 1 < nlevels ? levels[k + 1] : npool) - levels[k]) / (k + 1);
	int64_t lo = levels[n - 1], hi = n < nlevels ? levels[n] : npool;
	for (int64_t g = lo; g + n <= hi; g += n) {
		int64_t j = 0;
		for (; j < n; j++) {
			int64_t v = x_i32 ? ((const int32_t *)x)[p + j * d] : ((const int64_t *)x)[p + j * d];
			if (v != pool[g + j])
				break;
		}
		if (j == n)
			return first + (g - lo) / n;
	}
	return -1;
}

void rt_tfidf(float *y, const void *x, int x_i32, int64_t rows, int64_t cols, int64_t width, const int64_t *pool,
	      int64_t npool, const int64_t *levels, int nlevels, const int64_t *columns, const float *weights,
	      int64_t min_n, int64_t max_n, int64_t max_skip, int mode)
{
	size_t esize = x_i32 ? sizeof(int32_t) : sizeof(int64_t);
	memset(y, 0, (size_t)(rows * width) * sizeof *y);
	for (int64_t r = 0; r < rows; r++) {
		const char *xr = (const char *)x + (size_t)(r * cols) * esize;
		float *yr = y + r * width;
		for (int64_t n = min_n; n <= max_n; n++)
			for (int64_t d = 1; d <= (n == 1 ? 1 : max_skip + 1); d++)
				for (int64_t p = 0; p + (n - 1) * d < cols; p++) {
					int64_t i = tfidf_find(xr, x_i32, p, d, n, pool, npool, levels, nlevels);
					if (i >= 0)
						yr[columns[i]] += 1.0f;
				}
		/* the counts are per column; IDF and TFIDF weight them by the n-gram
		 * that owns the column */
		if (mode == RT_TFIDF_TF)
			continue;
		int64_t ngrams = 0;
		for (int k = 0; k < nlevels; k++)
			ngrams += ((k + 1 < nlevels ? levels[k + 1] : npool) - levels[k]) / (k + 1);
		for (int64_t i = 0; i < ngrams; i++) {
			float *v = &yr[columns[i]];
			if (mode == RT_TFIDF_IDF && *v > 0)
				*v = 1.0f;
			if (weights)
				*v *= weights[i];
		}
	}
}

/* ---- data-dependent lengths: NonZero, Compress, Unique, NonMaxSuppression ---------- */

/* Element i of x, of ONNX dtype dt, compared with element j of y: -1, 0, 1
 * (numerically; NaN equals NaN and sorts last, as in numpy's unique). */
static int elem_cmp(const void *x, int64_t i, const void *y, int64_t j, int dt)
{
	switch (dt) {
	case 1: case 11: {
		double a = dt == 1 ? ((const float *)x)[i] : ((const double *)x)[i];
		double b = dt == 1 ? ((const float *)y)[j] : ((const double *)y)[j];
		if (a != a || b != b)
			return (a != a) - (b != b);
		return (a > b) - (a < b);
	}
	case 7: case 6: case 5: case 3: {
		int64_t a = dt == 7 ? ((const int64_t *)x)[i] : dt == 6 ? ((const int32_t *)x)[i]
			    : dt == 5 ? ((const int16_t *)x)[i] : ((const int8_t *)x)[i];
		int64_t b = dt == 7 ? ((const int64_t *)y)[j] : dt == 6 ? ((const int32_t *)y)[j]
			    : dt == 5 ? ((const int16_t *)y)[j] : ((const int8_t *)y)[j];
		return (a > b) - (a < b);
	}
	default: {      /* unsigned and bool */
		size_t es = rt_dtype_size(dt);
		uint64_t a = es == 8 ? ((const uint64_t *)x)[i] : es == 4 ? ((const uint32_t *)x)[i]
			     : es == 2 ? ((const uint16_t *)x)[i] : ((const uint8_t *)x)[i];
		uint64_t b = es == 8 ? ((const uint64_t *)y)[j] : es == 4 ? ((const uint32_t *)y)[j]
			     : es == 2 ? ((const uint16_t *)y)[j] : ((const uint8_t *)y)[j];
		return (a > b) - (a < b);
	}
	}
}

static int is_nonzero(const void *x, int64_t i, int dt)
{
	if (dt == 1)
		return ((const float *)x)[i] != 0;
	if (dt == 11)
		return ((const double *)x)[i] != 0;
	size_t es = rt_dtype_size(dt);
	const unsigned char *p = (const unsigned char *)x + (size_t)i * es;
	for (size_t b = 0; b < es; b++)
		if (p[b])
			return 1;
	return 0;
}

int rt_nonzero(int64_t *len, int64_t *y, const void *x, int dtype, int rank, const int64_t *dims)
{
	int64_t total = 1, n = 0;
	for (int a = 0; a < rank; a++)
		total *= dims[a];
	for (int64_t i = 0; i < total; i++)
		n += is_nonzero(x, i, dtype);
	int64_t j = 0;
	for (int64_t i = 0; i < total; i++) {
		if (!is_nonzero(x, i, dtype))
			continue;
		int64_t rest = i;
		for (int a = rank - 1; a >= 0; a--) {
			y[a * n + j] = rest % dims[a];
			rest /= dims[a];
		}
		j++;
	}
	*len = n;
	return RT_OK;
}

int rt_compress(int64_t *len_out, void *y, const void *x, size_t esize, int64_t outer, int64_t len, int64_t inner,
		const uint8_t *cond, int64_t ncond)
{
	int64_t m = ncond < len ? ncond : len, n = 0;
	*len_out = 0;
	for (int64_t i = len; i < ncond; i++)
		if (cond[i])
			return RT_ERR_INDEX;
	for (int64_t i = 0; i < m; i++)
		n += cond[i] != 0;
	size_t row = (size_t)inner * esize;
	char *yp = y;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < m; i++)
			if (cond[i]) {
				memcpy(yp, (const char *)x + (size_t)(o * len + i) * row, row);
				yp += row;
			}
	*len_out = n;
	return RT_OK;
}

/* Slice i of a [outer, stride, inner] tensor against slice j of another. */
static int slice_cmp(const void *a, int64_t i, int64_t sa, const void *b, int64_t j, int64_t sb, int dt,
		     int64_t outer, int64_t inner)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t e = 0; e < inner; e++) {
			int c = elem_cmp(a, (o * sa + i) * inner + e, b, (o * sb + j) * inner + e, dt);
			if (c)
				return c;
		}
	return 0;
}

int rt_unique(int64_t *len_out, void *y, int64_t *indices, int64_t *inverse, int64_t *counts, const void *x,
	      int dtype, int64_t outer, int64_t len, int64_t inner, int sorted)
{
	size_t es = rt_dtype_size(dtype), row = (size_t)inner * es;
	int64_t n = 0;
	/* Y as [outer, len, inner] while it fills: slice j at y[(o len + j) inner] */
#define COPY_SLICE(j, i)                                                                                  \
	for (int64_t o = 0; o < outer; o++)                                                               \
		memcpy((char *)y + (size_t)(o * len + (j)) * row, (const char *)x + (size_t)(o * len + (i)) * row, row)
	if (!sorted) {
		for (int64_t i = 0; i < len; i++) {
			int64_t j = 0;
			while (j < n && slice_cmp(y, j, len, x, i, len, dtype, outer, inner))
				j++;
			if (j == n) {
				COPY_SLICE(n, i);
				if (indices)
					indices[n] = i;
				if (counts)
					counts[n] = 0;
				n++;
			}
			if (counts)
				counts[j]++;
			if (inverse)
				inverse[i] = j;
		}
	} else {
		/* the next distinct slice is the least one above the last taken
		 * (its first occurrence) */
		for (;;) {
			int64_t best = -1, cnt = 0;
			for (int64_t i = 0; i < len; i++) {
				if (n && slice_cmp(x, i, len, y, n - 1, len, dtype, outer, inner) <= 0)
					continue;
				int c = best < 0 ? -1 : slice_cmp(x, i, len, x, best, len, dtype, outer, inner);
				if (c < 0)
					best = i, cnt = 1;
				else if (c == 0)
					cnt++;
			}
			if (best < 0)
				break;
			COPY_SLICE(n, best);
			if (indices)
				indices[n] = best;
			if (counts)
				counts[n] = cnt;
			n++;
		}
		if (inverse)
			for (int64_t i = 0; i < len; i++) {
				int64_t lo = 0, hi = n - 1;     /* Y is sorted: bisect */
				while (lo < hi) {
					int64_t mid = lo + (hi - lo) / 2;
					if (slice_cmp(y, mid, len, x, i, len, dtype, outer, inner) < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				inverse[i] = lo;
			}
	}
#undef COPY_SLICE
	/* pack [outer, len, inner] to [outer, n, inner]: every row moves forward */
	for (int64_t o = 1; o < outer; o++)
		memmove((char *)y + (size_t)(o * n) * row, (char *)y + (size_t)(o * len) * row, (size_t)n * row);
	*len_out = n;
	return RT_OK;
}

/* Box i as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2. */
static void nms_box(const float *b, int center, float *c)
{
	if (center) {
		c[0] = b[1] - b[3] / 2, c[2] = b[1] + b[3] / 2;
		c[1] = b[0] - b[2] / 2, c[3] = b[0] + b[2] / 2;
	} else {
		c[0] = b[0] < b[2] ? b[0] : b[2], c[2] = b[0] < b[2] ? b[2] : b[0];
		c[1] = b[1] < b[3] ? b[1] : b[3], c[3] = b[1] < b[3] ? b[3] : b[1];
	}
}

/* IOU of two boxes above the threshold (boxes without area overlap nothing). */
static int nms_overlaps(const float *a4, const float *b4, int center, float thr)
{
	float a[4], b[4];
	nms_box(a4, center, a);
	nms_box(b4, center, b);
	float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
	if (area_a <= 0 || area_b <= 0)
		return 0;
	float y1 = a[0] > b[0] ? a[0] : b[0], x1 = a[1] > b[1] ? a[1] : b[1];
	float y2 = a[2] < b[2] ? a[2] : b[2], x2 = a[3] < b[3] ? a[3] : b[3];
	if (y2 <= y1 || x2 <= x1)
		return 0;
	float inter = (y2 - y1) * (x2 - x1), uni = area_a + area_b - inter;
	return uni > 0 && inter / uni > thr;
}

int rt_nms(int64_t *len, int64_t *y, const float *boxes, const float *scores, int64_t batches, int64_t classes,
	   int64_t nboxes, int64_t max_per_class, float iou_threshold, int has_score_threshold, float score_threshold,
	   int center_point_box)
{
	int64_t n = 0;
	*len = 0;
	if (!(iou_threshold >= 0 && iou_threshold <= 1))
		return RT_ERR_ARG;
	for (int64_t b = 0; b < batches; b++)
		for (int64_t c = 0; c < classes; c++) {
			const float *sc = scores + (b * classes + c) * nboxes, *bx = boxes + b * nboxes * 4;
			int64_t first = n, prev = -1;
			/* candidates by descending score, ties by index: the next one is
			 * the best below the previous in that order */
			while (n - first < max_per_class) {
				int64_t best = -1;
				for (int64_t i = 0; i < nboxes; i++) {
					if (sc[i] != sc[i] || (has_score_threshold && !(sc[i] > score_threshold)))
						continue;       /* NaN scores are never taken */
					if (prev >= 0 && !(sc[i] < sc[prev] || (sc[i] == sc[prev] && i > prev)))
						continue;
					if (best < 0 || sc[i] > sc[best])
						best = i;
				}
				if (best < 0)
					break;
				prev = best;
				int keep = 1;
				for (int64_t k = first; k < n && keep; k++)
					keep = !nms_overlaps(bx + y[k * 3 + 2] * 4, bx + best * 4, center_point_box,
							     iou_threshold);
				if (keep) {
					y[n * 3] = b, y[n * 3 + 1] = c, y[n * 3 + 2] = best;
					n++;
				}
			}
		}
	*len = n;
	return RT_OK;
}

/* ---- class-index losses ------------------------------------------------------------ */

int rt_class_loss(float *loss, float *logp, const float *x, int from_logits, const int64_t *target, const float *w,
		  int64_t n, int64_t c, int64_t d, int reduction, int has_ignore, int64_t ignore)
{
	double total = 0, wsum = 0;
	for (int64_t b = 0; b < n; b++)
		for (int64_t j = 0; j < d; j++) {
			const float *xr = x + b * c * d + j;    /* class k at xr[k * d] */
			double lse = 0;
			if (from_logits) {
				double mx = -INFINITY, se = 0;
				for (int64_t k = 0; k < c; k++)
					mx = xr[k * d] > mx ? xr[k * d] : mx;
				for (int64_t k = 0; k < c; k++)
					se += exp((double)xr[k * d] - mx);
				lse = log(se) + mx;
				if (logp)
					for (int64_t k = 0; k < c; k++)
						logp[b * c * d + k * d + j] = (float)(xr[k * d] - lse);
			}
			int64_t t = target[b * d + j];
			double l = 0, wt = 0;
			if (!(has_ignore && t == ignore)) {
				if (t < 0 || t >= c)
					return RT_ERR_INDEX;
				wt = w ? w[t] : 1.0;
				l = -wt * ((double)xr[t * d] - lse);
			}
			if (reduction == RT_LOSS_NONE)
				loss[b * d + j] = (float)l;
			total += l;
			wsum += wt;
		}
	if (reduction == RT_LOSS_SUM)
		loss[0] = (float)total;
	else if (reduction == RT_LOSS_MEAN)
		loss[0] = (float)(total / wsum);
	return RT_OK;
}

int rt_class_loss_grad(float *dx, float *dw, const float *dloss, const float *x, const int64_t *target,
		       const float *w, int64_t n, int64_t c, int64_t d, int reduction, int has_ignore, int64_t ignore)
{
	double wsum = 0, total = 0;
	for (int64_t i = 0; i < n * d; i++) {
		int64_t t = target[i];
		if (has_ignore && t == ignore)
			continue;
		if (t < 0 || t >= c)
			return RT_ERR_INDEX;
		double wt = w ? w[t] : 1.0;
		wsum += wt;
		total -= wt * x[((i / d) * c + t) * d + i % d];
	}
	if (dx)
		memset(dx, 0, (size_t)(n * c * d) * sizeof *dx);
	if (dw)
		memset(dw, 0, (size_t)c * sizeof *dw);
	double mean = total / wsum;
	for (int64_t b = 0; b < n; b++)
		for (int64_t j = 0; j < d; j++) {
			int64_t t = target[b * d + j];
			if (has_ignore && t == ignore)
				continue;
			double g = reduction == RT_LOSS_NONE ? dloss[b * d + j] : dloss[0];
			if (reduction == RT_LOSS_MEAN)
				g /= wsum;
			int64_t at = (b * c + t) * d + j;
			if (dx)
				dx[at] = (float)(-(w ? w[t] : 1.0) * g);
			/* the weight enters the term and, for the mean, the denominator */
			if (dw)
				dw[t] += (float)(g * (-(double)x[at] - (reduction == RT_LOSS_MEAN ? mean : 0.0)));
		}
	return RT_OK;
}

/* ---- ConvTranspose ------------------------------------------------------------------ */

void rt_conv_transpose(float *y, const float *x, const float *w, const float *b, int nsp, const int64_t *xdims,
		       const int64_t *ysp, int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides,
		       const int64_t *pads, const int64_t *dil)
{
	int64_t n = xdims[0], c = xdims[1], cg = c / group, mg = m / group, nin = 1, nout = 1, nk = 1;
	for (int a = 0; a < nsp; a++) {
		nin *= xdims[2 + a];
		nout *= ysp[a];
		nk *= kdims[a];
	}
	for (int64_t b0 = 0; b0 < n; b0++)
		for (int64_t o = 0; o < m; o++)
			for (int64_t p = 0; p < nout; p++)
				y[(b0 * m + o) * nout + p] = b ? b[o] : 0.0f;
	for (int64_t b0 = 0; b0 < n; b0++)
		for (int64_t ch = 0; ch < c; ch++) {
			int64_t g = ch / cg;
			for (int64_t p = 0; p < nin; p++) {
				float xv = x[(b0 * c + ch) * nin + p];
				int64_t pc[RT_TF_MAXRANK], q = p;
				for (int a = nsp - 1; a >= 0; a--) {
					pc[a] = q % xdims[2 + a];
					q /= xdims[2 + a];
				}
				for (int64_t kk = 0; kk < nk; kk++) {
					int64_t r = kk, off = 0, kc[RT_TF_MAXRANK];
					int in = 1;
					for (int a = nsp - 1; a >= 0; a--) {
						kc[a] = r % kdims[a];
						r /= kdims[a];
					}
					for (int a = 0; a < nsp && in; a++) {
						int64_t i = pc[a] * strides[a] - pads[a] + kc[a] * dil[a];
						in = i >= 0 && i < ysp[a];
						off = off * ysp[a] + i;
					}
					if (!in)
						continue;
					for (int64_t o = 0; o < mg; o++)
						y[(b0 * m + g * mg + o) * nout + off] += xv * w[(ch * mg + o) * nk + kk];
				}
			}
		}
}

/* ---- scatter and gather by index tuples ---------------------------------------------- */

static void scatter_one(void *dst, const void *src, size_t esize, int is_float, int reduction)
{
	if (reduction == RT_SCATTER_NONE || !is_float) {
		if (reduction == RT_SCATTER_NONE)
			memcpy(dst, src, esize);
		return;
	}
	float *d = dst;
	float s = *(const float *)src;
	switch (reduction) {
	case RT_SCATTER_ADD: *d += s; break;
	case RT_SCATTER_MUL: *d *= s; break;
	case RT_SCATTER_MAX: *d = s > *d ? s : *d; break;
	default: *d = s < *d ? s : *d; break;
	}
}

int rt_scatter_elements(void *y, const void *x, size_t esize, int is_f32, int rank, const int64_t *xdims,
			const int64_t *idx, const void *upd, const int64_t *idims, int axis, int reduction)
{
	int64_t total = 1, c[RT_TF_MAXRANK] = {0}, nx = 1;
	for (int a = 0; a < rank; a++) {
		total *= idims[a];
		nx *= xdims[a];
	}
	if (y != x)
		memcpy(y, x, (size_t)nx * esize);
	for (int64_t i = 0; i < total; i++) {
		int64_t j = idx[i];
		if (j < -xdims[axis] || j >= xdims[axis])
			return RT_ERR_INDEX;
		j += j < 0 ? xdims[axis] : 0;
		int64_t off = 0;
		for (int a = 0; a < rank; a++)
			off = off * xdims[a] + (a == axis ? j : c[a]);
		scatter_one((char *)y + (size_t)off * esize, (const char *)upd + (size_t)i * esize, esize, is_f32,
			    reduction);
		for (int a = rank - 1; a >= 0; a--) {
			if (++c[a] < idims[a])
				break;
			c[a] = 0;
		}
	}
	return RT_OK;
}

/* Offset of the slice an index tuple of q entries names in X (batch offset
 * base), or -1 when an entry is out of range. */
static int64_t nd_offset(const int64_t *tuple, int q, const int64_t *xdims, int from, int rank)
{
	int64_t off = 0;
	for (int a = from; a < rank; a++) {
		int64_t j = a - from < q ? tuple[a - from] : 0;
		if (j < -xdims[a] || j >= xdims[a])
			return -1;
		j += j < 0 ? xdims[a] : 0;
		off = off * xdims[a] + j;
	}
	return off;
}

int rt_scatter_nd(void *y, const void *x, size_t esize, int is_f32, int rank, const int64_t *xdims,
		  const int64_t *idx, int64_t nidx, int q, const void *upd, int reduction)
{
	int64_t nx = 1, slice = 1;
	for (int a = 0; a < rank; a++)
		nx *= xdims[a];
	for (int a = q; a < rank; a++)
		slice *= xdims[a];
	if (y != x)
		memcpy(y, x, (size_t)nx * esize);
	for (int64_t i = 0; i < nidx; i++) {
		int64_t off = nd_offset(idx + i * q, q, xdims, 0, rank);
		if (off < 0)
			return RT_ERR_INDEX;
		for (int64_t e = 0; e < slice; e++)
			scatter_one((char *)y + (size_t)(off + e) * esize, (const char *)upd + (size_t)(i * slice + e) * esize,
				    esize, is_f32, reduction);
	}
	return RT_OK;
}

int rt_gather_nd(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, int batch_dims,
		 const int64_t *idx, int64_t nidx_per_batch, int q)
{
	int64_t nb = 1, per_batch = 1, slice = 1;
	for (int a = 0; a < batch_dims; a++)
		nb *= xdims[a];
	for (int a = batch_dims; a < rank; a++)
		per_batch *= xdims[a];
	for (int a = batch_dims + q; a < rank; a++)
		slice *= xdims[a];
	for (int64_t bt = 0; bt < nb; bt++)
		for (int64_t i = 0; i < nidx_per_batch; i++) {
			int64_t off = nd_offset(idx + (bt * nidx_per_batch + i) * q, q, xdims, batch_dims, rank);
			if (off < 0)
				return RT_ERR_INDEX;
			memcpy((char *)y + (size_t)((bt * nidx_per_batch + i) * slice) * esize,
			       (const char *)x + (size_t)(bt * per_batch + off) * esize, (size_t)slice * esize);
		}
	return RT_OK;
}

void rt_instancenorm(float *y, const float *x, const float *scale, const float *bias, int64_t n, int64_t c,
		     int64_t inner, float eps)
{
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++) {
			const float *xr = x + (b * c + ch) * inner;
			double m = 0, v = 0;
			for (int64_t i = 0; i < inner; i++)
				m += xr[i];
			m /= (double)inner;
			for (int64_t i = 0; i < inner; i++)
				v += (xr[i] - m) * (xr[i] - m);
			v /= (double)inner;
			double s = scale[ch] / sqrt(v + (double)eps);
			for (int64_t i = 0; i < inner; i++)
				y[(b * c + ch) * inner + i] = (float)((xr[i] - m) * s + bias[ch]);
		}
}

/* ---- TopK ---------------------------------------------------------------------------- */

void rt_topk_f32(float *vals, int64_t *idx, const float *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
		 int largest)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			for (int64_t s = 0; s < k; s++) {
				/* the s-th pick: the best element not yet taken (lower index on ties) */
				int64_t best = -1;
				for (int64_t j = 0; j < n; j++) {
					int taken = 0;
					for (int64_t t = 0; t < s && !taken; t++)
						taken = idx[(o * k + t) * inner + i] == j;
					if (taken)
						continue;
					float v = x[(o * n + j) * inner + i];
					float b = best < 0 ? 0 : x[(o * n + best) * inner + i];
					if (best < 0 || (largest ? v > b : v < b))
						best = j;
				}
				idx[(o * k + s) * inner + i] = best;
				vals[(o * k + s) * inner + i] = x[(o * n + best) * inner + i];
			}
}

/* Integers are totally ordered: the s-th pick is the best element after
 * the (s-1)-th in the order (larger first, or smaller; then lower index). */
#define TOPK_INT(NAME, T)                                                                               \
	void NAME(T *vals, int64_t *idx, const T *x, int64_t outer, int64_t n, int64_t inner, int64_t k,       \
		  int largest)                                                                               \
	{                                                                                                    \
		for (int64_t o = 0; o < outer; o++)                                                          \
			for (int64_t i = 0; i < inner; i++) {                                                \
				const T *r = x + o * n * inner + i;                                          \
				int64_t prev = -1;                                                           \
				for (int64_t s = 0; s < k; s++) {                                            \
					int64_t best = -1;                                                   \
					for (int64_t j = 0; j < n; j++) {                                    \
						T v = r[j * inner];                                          \
						if (prev >= 0) {                                             \
							T p = r[prev * inner];                               \
							int after = largest ? v < p || (v == p && j > prev)  \
									    : v > p || (v == p && j > prev); \
							if (!after)                                          \
								continue;                                    \
						}                                                            \
						T b = best < 0 ? v : r[best * inner];                        \
						if (best < 0 || (largest ? v > b : v < b))                   \
							best = j;                                            \
					}                                                                    \
					idx[(o * k + s) * inner + i] = best;                                 \
					vals[(o * k + s) * inner + i] = r[best * inner];                     \
					prev = best;                                                         \
				}                                                                            \
			}                                                                                    \
	}
TOPK_INT(rt_topk_i64, int64_t)
TOPK_INT(rt_topk_i32, int32_t)

/* ---- LRN, MeanVarianceNormalization, MaxUnpool ------------------------------------------ */

void rt_lrn(float *y, const float *x, int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta,
	    float bias)
{
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  /* floor and ceil of (size - 1) / 2 */
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t i = 0; i < inner; i++) {
				double sq = 0.0;
				int64_t from = ch - lo < 0 ? 0 : ch - lo, to = ch + hi > c - 1 ? c - 1 : ch + hi;
				for (int64_t j = from; j <= to; j++) {
					double v = x[(b * c + j) * inner + i];
					sq += v * v;
				}
				int64_t at = (b * c + ch) * inner + i;
				y[at] = (float)((double)x[at] / pow((double)bias + (double)alpha / (double)size * sq, (double)beta));
			}
}

int rt_mvn(float *y, const float *x, int rank, const int64_t *dims, const unsigned char *reduced)
{
	int64_t total = 1, groups = 1, stride[RT_TF_MAXRANK], gs = 1;
	if (rank < 0 || rank > RT_TF_MAXRANK)
		return RT_ERR_ARG;
	/* the group of an element: its row-major index over the kept axes */
	for (int a = rank - 1; a >= 0; a--) {
		total *= dims[a];
		stride[a] = reduced[a] ? 0 : gs;
		if (!reduced[a]) {
			gs *= dims[a];
			groups *= dims[a];
		}
	}
	double *sum = calloc((size_t)(2 * groups > 0 ? 2 * groups : 1), sizeof *sum), *sq = sum + groups;
	if (!sum)
		return RT_ERR_NOMEM;
	int64_t per = groups ? total / groups : 0, idx[RT_TF_MAXRANK] = {0};
	for (int pass = 0; pass < 3; pass++) {
		memset(idx, 0, sizeof idx);
		for (int64_t i = 0; i < total; i++) {
			int64_t g = 0;
			for (int a = 0; a < rank; a++)
				g += idx[a] * stride[a];
			if (pass == 0)
				sum[g] += x[i];
			else if (pass == 1)
				sq[g] += ((double)x[i] - sum[g]) * ((double)x[i] - sum[g]);
			else    /* (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9), the specification's epsilon */
				y[i] = (float)(((double)x[i] - sum[g]) / (sqrt(sq[g]) + 1e-9));
			for (int a = rank - 1; a >= 0; a--) {
				if (++idx[a] < dims[a])
					break;
				idx[a] = 0;
			}
		}
		for (int64_t g = 0; g < groups && pass < 2; g++) {
			if (pass == 0)
				sum[g] /= (double)per;
			else
				sq[g] /= (double)per;
		}
	}
	free(sum);
	return RT_OK;
}

int rt_max_unpool(float *y, const float *x, const int64_t *idx, int64_t nx, int rank, const int64_t *idims,
		  const int64_t *ydims)
{
	int64_t ny = 1, ni = 1;
	for (int a = 0; a < rank; a++) {
		ny *= ydims[a];
		ni *= idims[a];
	}
	memset(y, 0, (size_t)ny * sizeof *y);
	for (int64_t i = 0; i < nx; i++) {
		int64_t q = idx[i], off = 0, scale = 1;
		if (q < 0 || q >= ni)
			return RT_ERR_INDEX;
		for (int a = rank - 1; a >= 0; a--) {
			int64_t c = q % idims[a];
			q /= idims[a];
			if (c >= ydims[a])
				return RT_ERR_INDEX;
			off += c * scale;
			scale *= ydims[a];
		}
		y[off] = x[i];
	}
	return RT_OK;
}
