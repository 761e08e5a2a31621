/* rt_random.c: the ONNX random operators and Dropout in training mode.
 *
 * Every value comes from an rt_rng stream (xoshiro256** seeded through
 * splitmix64, rt_init.c), in row-major element order, so a seed gives the
 * same tensors on every platform: uniforms are 53-bit doubles in [0, 1),
 * normals Box-Muller in double (rt_rng_normal), rounded to the output dtype
 * at the end.  How a generated model seeds its streams: cellrt.h, "random
 * operators".
 */
#include "cellrt.h"

#include <stdbool.h>
#include <string.h>

enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_UINT16 = 4, DT_INT16 = 5, DT_INT32 = 6, DT_INT64 = 7,
       DT_BOOL = 9, DT_DOUBLE = 11 };

void rt_rng_seed_stream(rt_rng *r, uint64_t seed, uint64_t stream)
{
	/* splitmix64's finaliser scrambles the seed; the stream number, times
	 * an odd constant, is xor'ed in, and rt_rng_seed expands the result */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	rt_rng_seed(r, z ^ (stream * 0xd1342543de82ef95ULL));
}

static int is_float(int dtype) { return dtype == DT_FLOAT || dtype == DT_DOUBLE; }

/* Stores v (a draw in double) as element i of y. */
static void put(void *y, int dtype, int64_t i, double v)
{
	if (dtype == DT_FLOAT)
		((float *)y)[i] = (float)v;
	else
		((double *)y)[i] = v;
}

int rt_random_uniform(void *y, int dtype, int64_t n, double low, double high, rt_rng *r)
{
	if (!is_float(dtype) || !r || n < 0)
		return RT_ERR_ARG;
	for (int64_t i = 0; i < n; i++)
		put(y, dtype, i, low + (high - low) * rt_rng_uniform(r));
	return RT_OK;
}

int rt_random_normal(void *y, int dtype, int64_t n, double mean, double scale, rt_rng *r)
{
	if (!is_float(dtype) || !r || n < 0)
		return RT_ERR_ARG;
	for (int64_t i = 0; i < n; i++)
		put(y, dtype, i, mean + scale * rt_rng_normal(r));
	return RT_OK;
}

int rt_bernoulli(void *y, int ydtype, const void *p, int pdtype, int64_t n, rt_rng *r)
{
	if (!is_float(pdtype) || !r || n < 0)
		return RT_ERR_ARG;
	switch (ydtype) {
	case DT_FLOAT: case DT_DOUBLE: case DT_UINT8: case DT_INT8: case DT_UINT16: case DT_INT16:
	case DT_INT32: case DT_INT64: case DT_BOOL:
		break;
	default:
		return RT_ERR_ARG;
	}
	for (int64_t i = 0; i < n; i++) {
		double pi = pdtype == DT_FLOAT ? ((const float *)p)[i] : ((const double *)p)[i];
		int one = rt_rng_uniform(r) < pi;
		switch (ydtype) {
		case DT_FLOAT: ((float *)y)[i] = (float)one; break;
		case DT_DOUBLE: ((double *)y)[i] = one; break;
		case DT_UINT8: ((uint8_t *)y)[i] = (uint8_t)one; break;
		case DT_INT8: ((int8_t *)y)[i] = (int8_t)one; break;
		case DT_UINT16: ((uint16_t *)y)[i] = (uint16_t)one; break;
		case DT_INT16: ((int16_t *)y)[i] = (int16_t)one; break;
		case DT_INT32: ((int32_t *)y)[i] = one; break;
		case DT_INT64: ((int64_t *)y)[i] = one; break;
		default: ((bool *)y)[i] = one; break;
		}
	}
	return RT_OK;
}

int rt_dropout(void *y, unsigned char *mask, const void *x, int dtype, int64_t n, double ratio, int training,
	       rt_rng *r)
{
	if (!is_float(dtype) || n < 0 || (training && !(ratio >= 0 && ratio < 1)) || (training && !r))
		return RT_ERR_ARG;
	size_t es = dtype == DT_FLOAT ? sizeof(float) : sizeof(double);
	if (!training || ratio == 0) {
		/* the identity, exactly (y may be x itself) */
		if (y && y != x)
			memmove(y, x, (size_t)n * es);
		if (mask)
			memset(mask, 1, (size_t)n);
		return RT_OK;
	}
	double scale = 1.0 / (1.0 - ratio);
	for (int64_t i = 0; i < n; i++) {
		int keep = rt_rng_uniform(r) >= ratio;
		if (!y)
			;       /* only the mask is wanted */
		else if (dtype == DT_FLOAT)
			((float *)y)[i] = keep ? (float)(((const float *)x)[i] * scale) : 0.0f;
		else
			((double *)y)[i] = keep ? ((const double *)x)[i] * scale : 0.0;
		if (mask)
			mask[i] = (unsigned char)keep;
	}
	return RT_OK;
}
