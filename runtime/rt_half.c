/* rt_half.c: float16 (IEEE binary16) and bfloat16 conversions.
 *
 * cellc computes float16 and bfloat16 tensors in float32 and converts at the
 * model's boundaries: these functions read and write the 16-bit encodings and
 * round a float32 (or float64) value to the nearest value of the narrower
 * type, which stays a float.  Rounding to float16 is to nearest, ties to
 * even, from the exact input (a float64 is not rounded to float32 first);
 * magnitudes from 65520 up become infinities.  Rounding to bfloat16 keeps the
 * upper 16 bits of the float32 encoding (truncation, what the ONNX reference
 * tests of Cast to BFLOAT16 compute), a NaN staying a NaN.
 */
#include "cellrt.h"

#include <math.h>
#include <string.h>

float rt_round_f16(double x)
{
	if (isnan(x))
		return (float)x;
	double ax = fabs(x);
	if (ax >= 65520.0)
		return x > 0 ? INFINITY : -INFINITY;
	double q;
	if (ax < 0x1p-14) {
		q = 0x1p-24;    /* subnormals: a fixed step */
	} else {
		int e;
		frexp(ax, &e);  /* ax = m 2^e, m in [0.5, 1): the leading bit is 2^(e-1) */
		q = ldexp(1.0, e - 1 - 10);
	}
	/* x / q is exact (a power of two), nearbyint rounds ties to even */
	return (float)(nearbyint(x / q) * q);
}

uint16_t rt_f32_to_f16(float x)
{
	float r = rt_round_f16(x);
	uint16_t sign = signbit(r) ? 0x8000u : 0u;
	if (isnan(r))
		return (uint16_t)(sign | 0x7e00u);
	double a = fabs((double)r);
	if (isinf(r))
		return (uint16_t)(sign | 0x7c00u);
	if (a == 0.0)
		return sign;
	if (a < 0x1p-14)
		return (uint16_t)(sign | (uint16_t)(a / 0x1p-24));
	int e;
	double m = frexp(a, &e);        /* a = (2m) 2^(e-1), 2m in [1, 2) */
	return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((2.0 * m - 1.0) * 1024.0));
}

float rt_f16_to_f32(uint16_t h)
{
	int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	float sign = (h & 0x8000u) ? -1.0f : 1.0f;
	if (exp == 0x1f)
		return mant ? NAN : sign * INFINITY;
	if (exp == 0)
		return sign * ldexpf((float)mant, -24);
	return sign * ldexpf((float)(1024 + mant), exp - 25);
}

uint16_t rt_f32_to_bf16(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if (isnan(x))
		return (uint16_t)((u >> 16) | 0x0040u);  /* quiet: the kept bits must stay a NaN */
	return (uint16_t)(u >> 16);
}

uint16_t rt_f32_to_bf16_nearest(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if (isnan(x))
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);        /* to nearest, ties to even; past the largest: inf */
	return (uint16_t)(u >> 16);
}

float rt_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float x;
	memcpy(&x, &u, 4);
	return x;
}

float rt_round_bf16(float x)
{
	return rt_bf16_to_f32(rt_f32_to_bf16(x));
}
