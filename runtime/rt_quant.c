/* rt_quant.c: the kernels of ONNX's quantization operators.
 *
 * Quantized tensors are uint8 or int8 (ONNX element types 2 and 3, the
 * `dt` arguments); scales are float, zero points of the quantized type.
 * QuantizeLinear rounds x / scale to nearest, ties to even, adds the zero
 * point and saturates; DequantizeLinear computes (x - zero point) * scale.
 * The integer products (MatMulInteger, ConvInteger) subtract the zero
 * points and accumulate in int32, exactly; the QLinear forms then scale each
 * accumulator by (a_scale b_scale / y_scale), round it to nearest even, add
 * y's zero point and saturate.  The convolutions are plain loop nests: with
 * 8-bit operands and int32 sums there is no float GEMM to reuse without
 * losing exactness above 2^24, and positions in the padding are skipped,
 * which is the same as padding with the zero point.
 */
#include "cellrt.h"

#include <math.h>

static int32_t ld8(const void *p, int dt, int64_t i)
{
	return dt == 3 ? (int32_t)((const int8_t *)p)[i] : (int32_t)((const uint8_t *)p)[i];
}

/* a zero point: NULL is 0; one value when count is 1, else element i */
static int32_t zp_at(const void *zp, int dt, int64_t count, int64_t i)
{
	return zp ? ld8(zp, dt, count == 1 ? 0 : i) : 0;
}

/* rint(v) + zp, saturated to dt's range (NaN: the zero point) */
static void st_sat(void *y, int dt, int64_t i, float v, int32_t zp)
{
	float lo = dt == 3 ? -128.0f : 0.0f, hi = dt == 3 ? 127.0f : 255.0f;
	float q = isnan(v) ? (float)zp : nearbyintf(v) + (float)zp;
	q = q < lo ? lo : q > hi ? hi : q;
	if (dt == 3)
		((int8_t *)y)[i] = (int8_t)q;
	else
		((uint8_t *)y)[i] = (uint8_t)q;
}

void rt_quantize_linear(void *y, int dt, const float *x, const float *scale, const void *zp, int64_t outer,
			int64_t n, int64_t inner)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < n; c++) {
			int32_t z = zp_at(zp, dt, n, c);
			for (int64_t i = 0; i < inner; i++) {
				int64_t at = (o * n + c) * inner + i;
				st_sat(y, dt, at, x[at] / scale[c], z);
			}
		}
}

void rt_dequantize_linear(float *y, const void *x, int dt, const float *scale, const void *zp, int64_t outer,
			  int64_t n, int64_t inner)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < n; c++) {
			int64_t z = dt == 6 ? (zp ? ((const int32_t *)zp)[n == 1 ? 0 : c] : 0) : zp_at(zp, dt, n, c);
			for (int64_t i = 0; i < inner; i++) {
				int64_t at = (o * n + c) * inner + i;
				int64_t v = dt == 6 ? ((const int32_t *)x)[at] : ld8(x, dt, at);
				y[at] = (float)((double)(v - z) * (double)scale[c]);
			}
		}
}

void rt_dynamic_quantize_linear(uint8_t *y, float *scale, uint8_t *zp, const float *x, int64_t n)
{
	float lo = 0.0f, hi = 0.0f;     /* the range always includes 0 */
	for (int64_t i = 0; i < n; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
	}
	float s = (hi - lo) / 255.0f;
	float z = s > 0.0f ? nearbyintf((0.0f - lo) / s) : 0.0f;
	z = z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z;
	*scale = s;
	*zp = (uint8_t)z;
	for (int64_t i = 0; i < n; i++)
		st_sat(y, 2, i, s > 0.0f ? x[i] / s : 0.0f, (int32_t)z);
}

float rt_scale_i8(int64_t K, const float *w, int64_t inc)
{
	float m = 0.0f;
	for (int64_t k = 0; k < K; k++)
		m = fabsf(w[k * inc]) > m ? fabsf(w[k * inc]) : m;
	float s = m > 0.0f && isfinite(m) ? m / 127.0f : 1.0f;
	return s > 0.0f ? s : 1.0f;     /* m / 127 may underflow */
}

int8_t rt_quant_i8(float w, float s)
{
	float v = w / s;
	v = isnan(v) ? 0.0f : nearbyintf(v);
	return (int8_t)(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
}

float rt_quant_act_u7(int64_t K, const float *a, uint8_t *q, int32_t *zp)
{
	float lo = 0.0f, hi = 0.0f, bad = 0.0f;
	for (int64_t k = 0; k < K; k++) {
		lo = a[k] < lo ? a[k] : lo;
		hi = a[k] > hi ? a[k] : hi;
		bad += a[k] * 0.0f;     /* NaN when a[k] is NaN or infinite */
	}
	if (bad != 0.0f) {
		*zp = 0;
		for (int64_t k = 0; k < K; k++)
			q[k] = 0;
		return NAN;
	}
	float s = (hi - lo) / 127.0f;
	if (!(s > 0.0f))
		s = 1.0f;
	float inv = 1.0f / s, z = nearbyintf(-lo * inv);
	z = z < 0.0f ? 0.0f : z > 127.0f ? 127.0f : z;
	*zp = (int32_t)z;
	for (int64_t k = 0; k < K; k++) {
		float v = nearbyintf(a[k] * inv) + z;
		q[k] = (uint8_t)(v < 0.0f ? 0.0f : v > 127.0f ? 127.0f : v);
	}
	return s;
}

/* sum over k of (A[r, k] - azp) (B[k, c] - bzp) */
static int32_t dot8(const void *a, int adt, int32_t azp, const void *b, int bdt, int32_t bzp, int64_t r, int64_t c,
		    int64_t n, int64_t k)
{
	int32_t acc = 0;
	for (int64_t j = 0; j < k; j++)
		acc += (ld8(a, adt, r * k + j) - azp) * (ld8(b, bdt, j * n + c) - bzp);
	return acc;
}

void rt_matmul_integer(int32_t *y, const void *a, int adt, const void *azp, int64_t nazp, const void *b, int bdt,
		       const void *bzp, int64_t nbzp, int64_t m, int64_t n, int64_t k)
{
	for (int64_t r = 0; r < m; r++)
		for (int64_t c = 0; c < n; c++)
			y[r * n + c] = dot8(a, adt, zp_at(azp, adt, nazp, r), b, bdt, zp_at(bzp, bdt, nbzp, c), r, c, n, k);
}

void rt_qlinear_matmul(void *y, int ydt, float mult, const void *yzp, const void *a, int adt, const void *azp,
		       const void *b, int bdt, const void *bzp, int64_t m, int64_t n, int64_t k)
{
	int32_t az = zp_at(azp, adt, 1, 0), bz = zp_at(bzp, bdt, 1, 0), yz = zp_at(yzp, ydt, 1, 0);
	for (int64_t r = 0; r < m; r++)
		for (int64_t c = 0; c < n; c++)
			st_sat(y, ydt, r * n + c, (float)dot8(a, adt, az, b, bdt, bz, r, c, n, k) * mult, yz);
}

/* The loop nest of both integer convolutions: each output element's int32
 * sum, plus bias[m] when bias is not NULL, is stored in yi when not NULL,
 * else requantized into yq with mult[m] (nmult 1: one for all) and yzp. */
static void conv_int(int32_t *yi, void *yq, int ydt, const float *mult, int64_t nmult, const void *yzp,
		     const void *x, int xdt, const void *xzp, const void *w, int wdt, const void *wzp, int64_t nwzp,
		     const int32_t *bias, int nsp, const int64_t *xdims, int64_t m, int64_t group, const int64_t *kdims,
		     const int64_t *strides, const int64_t *pads, const int64_t *dil)
{
	int64_t nb = xdims[0], c = xdims[1], cg = c / group, mg = m / group, nin = 1, nout = 1, nk = 1;
	int64_t osp[RT_TF_MAXRANK];
	for (int a = 0; a < nsp; a++) {
		int64_t span = dil[a] * (kdims[a] - 1) + 1, d = xdims[2 + a] + pads[a] + pads[nsp + a];
		osp[a] = d < span ? 0 : (d - span) / strides[a] + 1;
		nin *= xdims[2 + a];
		nout *= osp[a];
		nk *= kdims[a];
	}
	int32_t xz = zp_at(xzp, xdt, 1, 0), yz = yzp ? zp_at(yzp, ydt, 1, 0) : 0;
	for (int64_t bi = 0; bi < nb; bi++)
		for (int64_t oc = 0; oc < m; oc++) {
			int64_t g = oc / mg;
			int32_t wz = zp_at(wzp, wdt, nwzp, oc);
			for (int64_t p = 0; p < nout; p++) {
				int64_t pc[RT_TF_MAXRANK], q = p;
				for (int a = nsp - 1; a >= 0; a--) {
					pc[a] = q % osp[a];
					q /= osp[a];
				}
				int32_t acc = bias ? bias[oc] : 0;
				for (int64_t ic = 0; ic < cg; ic++) {
					int64_t xbase = (bi * c + g * cg + ic) * nin, wbase = (oc * cg + ic) * nk;
					for (int64_t kk = 0; kk < nk; kk++) {
						int64_t off = 0, r = kk, kc[RT_TF_MAXRANK];
						int in = 1;
						for (int a = nsp - 1; a >= 0; a--) {
							kc[a] = r % kdims[a];
							r /= kdims[a];
						}
						for (int a = 0; a < nsp; a++) {
							int64_t i = pc[a] * strides[a] - pads[a] + kc[a] * dil[a];
							in &= i >= 0 && i < xdims[2 + a];
							off = off * xdims[2 + a] + i;
						}
						if (in)
							acc += (ld8(x, xdt, xbase + off) - xz) * (ld8(w, wdt, wbase + kk) - wz);
					}
				}
				int64_t at = (bi * m + oc) * nout + p;
				if (yi)
					yi[at] = acc;
				else
					st_sat(yq, ydt, at, (float)acc * mult[nmult == 1 ? 0 : oc], yz);
			}
		}
}

void rt_conv_integer(int32_t *y, const void *x, int xdt, const void *xzp, const void *w, int wdt, const void *wzp,
		     int64_t nwzp, int nsp, const int64_t *xdims, int64_t m, int64_t group, const int64_t *kdims,
		     const int64_t *strides, const int64_t *pads, const int64_t *dil)
{
	conv_int(y, NULL, 0, NULL, 0, NULL, x, xdt, xzp, w, wdt, wzp, nwzp, NULL, nsp, xdims, m, group, kdims,
		 strides, pads, dil);
}

void rt_qlinear_conv(void *y, int ydt, const float *mult, int64_t nmult, const void *yzp, const void *x, int xdt,
		     const void *xzp, const void *w, int wdt, const void *wzp, int64_t nwzp, const int32_t *bias,
		     int nsp, const int64_t *xdims, int64_t m, int64_t group, const int64_t *kdims,
		     const int64_t *strides, const int64_t *pads, const int64_t *dil)
{
	conv_int(NULL, y, ydt, mult, nmult, yzp, x, xdt, xzp, w, wdt, wzp, nwzp, bias, nsp, xdims, m, group, kdims,
		 strides, pads, dil);
}

void rt_maxpool_8(void *y, int dt, const void *x, int nsp, const int64_t *xdims, const int64_t *ysp,
		  const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil)
{
	int64_t nc = xdims[0] * xdims[1], nin = 1, nout = 1, nk = 1;
	for (int a = 0; a < nsp; a++) {
		nin *= xdims[2 + a];
		nout *= ysp[a];
		nk *= k[a];
	}
	for (int64_t plane = 0; plane < nc; plane++)
		for (int64_t p = 0; p < nout; p++) {
			int64_t pc[RT_TF_MAXRANK], q = p;
			for (int a = nsp - 1; a >= 0; a--) {
				pc[a] = q % ysp[a];
				q /= ysp[a];
			}
			int32_t best = dt == 3 ? -128 : 0;
			for (int64_t kk = 0; kk < nk; kk++) {
				int64_t off = 0, r = kk, kc[RT_TF_MAXRANK];
				int in = 1;
				for (int a = nsp - 1; a >= 0; a--) {
					kc[a] = r % k[a];
					r /= k[a];
				}
				for (int a = 0; a < nsp; a++) {
					int64_t i = pc[a] * st[a] - pads[a] + kc[a] * dil[a];
					in &= i >= 0 && i < xdims[2 + a];
					off = off * xdims[2 + a] + i;
				}
				if (in && ld8(x, dt, plane * nin + off) > best)
					best = ld8(x, dt, plane * nin + off);
			}
			if (dt == 3)
				((int8_t *)y)[plane * nout + p] = (int8_t)best;
			else
				((uint8_t *)y)[plane * nout + p] = (uint8_t)best;
		}
}
