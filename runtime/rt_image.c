/* rt_image.c: the kernels of the ONNX image-sampling operators: Resize (and
 * the deprecated Upsample, which cellc loads as a Resize), GridSample and
 * RoiAlign.  All tensors are dense row-major float32; nothing is allocated.
 *
 * rt_resize evaluates each output element as the nested 1-D interpolation the
 * ONNX specification defines: along each axis the output coordinate is mapped
 * back to an input coordinate (coordinate_transformation_mode), which picks up
 * to 4 input positions and their weights (nearest, linear, cubic).  The
 * innermost axis is interpolated first, so an outer axis whose coordinate
 * falls outside a tf_crop_and_resize region yields extrapolation_value
 * whatever the inner ones gave, and an inner one that falls outside
 * contributes extrapolation_value to the outer weighted sum, as the
 * specification's reference does.  The positions and weights of an axis are
 * recomputed only when its output coordinate changes (an odometer over the
 * output), so the cost per element is the product of the tap counts, taps of
 * zero weight dropped (an axis that is not resized costs one tap).
 *
 * rt_grid_sample follows the 2-D GridSample of opset 16 (bilinear, nearest
 * rounding halves to even, bicubic with A = -0.75; zeros, border or
 * reflection padding); rt_roi_align the RoiAlign of opset 16 (average or
 * maximum of bilinear samples on a regular grid in each bin).
 */
#include "cellrt.h"

#include <math.h>
#include <string.h>

/* ---- Resize ------------------------------------------------------------------ */

/* The input positions and weights one output coordinate reads on one axis. */
typedef struct resize_taps {
	int n;                  /* taps kept (0..4) */
	int outside;            /* tf_crop_and_resize outside the input: extrapolation_value */
	int64_t idx[4];
	float w[4];
} resize_taps;

/* Keys' cubic convolution kernel of parameter a at distance d >= 0. */
static double cubic_weight(double d, double a)
{
	if (d <= 1.0)
		return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
	if (d < 2.0)
		return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
	return 0.0;
}

/* The input coordinate of output coordinate o on an axis of `in` input and
 * `out` output elements resized by `scale` (roi: start and end, or NULL);
 * sets *outside for tf_crop_and_resize coordinates beyond the input. */
static double resize_coord(int64_t o, int64_t in, int64_t out, double scale, const double *roi, int coord,
			   int *outside)
{
	/* length_resized of the specification: in * scale, not floored (the
	 * output size itself when the sizes input gave the scale) */
	double len = (double)in * scale, r = nearbyint(len);
	if (fabs(len - r) <= 1e-12 * r)
		len = r;
	double x = (double)o;
	*outside = 0;
	switch (coord) {
	case RT_COORD_HALF_PIXEL:
		return (x + 0.5) / scale - 0.5;
	case RT_COORD_HALF_PIXEL_SYMMETRIC: {
		double offset = (double)in / 2.0 * (1.0 - (double)out / len);
		return offset + (x + 0.5) / scale - 0.5;
	}
	case RT_COORD_PYTORCH_HALF_PIXEL:
		return len > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
	case RT_COORD_ALIGN_CORNERS:
		return len == 1.0 ? 0.0 : x * (double)(in - 1) / (len - 1.0);
	case RT_COORD_ASYMMETRIC:
		return x / scale;
	case RT_COORD_TF_HALF_PIXEL_FOR_NN:
		return (x + 0.5) / scale;
	default: {       /* RT_COORD_TF_CROP_AND_RESIZE */
		double start = roi ? roi[0] : 0.0, end = roi ? roi[1] : 1.0, span = (double)(in - 1);
		double v = len > 1.0 ? start * span + x * (end - start) * span / (len - 1.0)
				     : 0.5 * (start + end) * span;
		*outside = v < 0.0 || v > span;
		return v;
	}
	}
}

static int64_t clamp_index(int64_t i, int64_t n)
{
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

static void resize_axis_taps(resize_taps *t, int64_t o, int64_t in, int64_t out, double scale, const double *roi,
			     const rt_resize_mode *m)
{
	double x = resize_coord(o, in, out, scale, roi, m->coord, &t->outside);
	t->n = 0;
	if (t->outside)
		return;
	double fl = floor(x), r = x - fl;
	int64_t base = (int64_t)fl;
	if (m->mode == RT_RESIZE_NEAREST) {
		int up;
		if (r == 0.0)
			up = 0;
		else if (m->nearest == RT_NEAREST_ROUND_PREFER_FLOOR)
			up = r > 0.5;
		else if (m->nearest == RT_NEAREST_ROUND_PREFER_CEIL)
			up = r >= 0.5;
		else
			up = m->nearest == RT_NEAREST_CEIL;
		t->n = 1;
		t->idx[0] = clamp_index(base + up, in);
		t->w[0] = 1.0f;
		return;
	}
	double w[4];
	int64_t idx[4];
	int n;
	if (m->mode == RT_RESIZE_LINEAR) {
		n = 2;
		idx[0] = base, w[0] = 1.0 - r;
		idx[1] = base + 1, w[1] = r;
	} else {
		n = 4;
		for (int k = 0; k < 4; k++) {
			idx[k] = base - 1 + k;
			w[k] = cubic_weight(fabs(r - (double)(k - 1)), m->cubic_a);
		}
	}
	if (m->exclude_outside) {
		double sum = 0.0;
		for (int k = 0; k < n; k++) {
			if (idx[k] < 0 || idx[k] >= in)
				w[k] = 0.0;
			sum += w[k];
		}
		for (int k = 0; k < n && sum != 0.0; k++)
			w[k] /= sum;
	}
	for (int k = 0; k < n; k++)
		if (w[k] != 0.0) {
			t->idx[t->n] = clamp_index(idx[k], in);
			t->w[t->n++] = (float)w[k];
		}
}

/* The nested interpolation from axis a on, at offset off of X. */
static float resize_at(const float *x, int a, int rank, const resize_taps *t, const int64_t *stride, int64_t off,
		       float extrapolation)
{
	const resize_taps *ta = &t[a];
	if (ta->outside)
		return extrapolation;
	float acc = 0.0f;
	for (int k = 0; k < ta->n; k++) {
		int64_t o = off + ta->idx[k] * stride[a];
		acc += ta->w[k] * (a == rank - 1 ? x[o] : resize_at(x, a + 1, rank, t, stride, o, extrapolation));
	}
	return acc;
}

void rt_resize(float *y, const float *x, int rank, const int64_t *xdims, const int64_t *ydims, const double *scales,
	       const double *roi, const rt_resize_mode *m)
{
	if (rank == 0) {
		y[0] = x[0];
		return;
	}
	int64_t total = 1, stride[RT_TF_MAXRANK], pos[RT_TF_MAXRANK];
	resize_taps t[RT_TF_MAXRANK];
	for (int a = rank - 1; a >= 0; a--) {
		stride[a] = a == rank - 1 ? 1 : stride[a + 1] * xdims[a + 1];
		total *= ydims[a];
	}
	if (total == 0)
		return;
	for (int a = 0; a < rank; a++) {
		pos[a] = 0;
		resize_axis_taps(&t[a], 0, xdims[a], ydims[a], scales[a], roi ? (double[]){roi[a], roi[rank + a]} : NULL,
				 m);
	}
	for (int64_t i = 0; i < total; i++) {
		y[i] = resize_at(x, 0, rank, t, stride, 0, m->extrapolation);
		/* the next output coordinate: the axes that changed get new taps */
		for (int a = rank - 1; a >= 0; a--) {
			if (++pos[a] < ydims[a]) {
				resize_axis_taps(&t[a], pos[a], xdims[a], ydims[a], scales[a],
						 roi ? (double[]){roi[a], roi[rank + a]} : NULL, m);
				break;
			}
			pos[a] = 0;
			resize_axis_taps(&t[a], 0, xdims[a], ydims[a], scales[a],
					 roi ? (double[]){roi[a], roi[rank + a]} : NULL, m);
		}
	}
}

/* ---- GridSample -------------------------------------------------------------- */

/* Grid value g in [-1, 1] -> pixel coordinate on an axis of n pixels. */
static double grid_unnormalize(double g, int64_t n, int align_corners)
{
	return align_corners ? (g + 1.0) / 2.0 * (double)(n - 1) : ((g + 1.0) * (double)n - 1.0) / 2.0;
}

/* v reflected about the bounds lo2 / 2 and hi2 / 2 until it lies between them. */
static double grid_reflect(double v, double lo2, double hi2)
{
	if (lo2 == hi2)
		return 0.0;
	double lo = lo2 / 2.0, span = (hi2 - lo2) / 2.0;
	v = fabs(v - lo);
	double extra = fmod(v, span);
	return fmod(floor(v / span), 2.0) == 0.0 ? lo + extra : lo + span - extra;
}

/* The padding mode applied to a coordinate (border and reflection keep it
 * inside the image; zeros leaves it). */
static double grid_pad_coord(double v, int64_t n, int padding, int align_corners)
{
	if (padding == RT_GRID_PAD_ZEROS)
		return v;
	if (padding == RT_GRID_PAD_REFLECTION) {
		v = align_corners ? grid_reflect(v, 0.0, 2.0 * (double)(n - 1))
				  : grid_reflect(v, -1.0, 2.0 * (double)n - 1.0);
	}
	return v < 0.0 ? 0.0 : v > (double)(n - 1) ? (double)(n - 1) : v;
}

/* X at the integer coordinates (y, x) of one channel plane, 0 outside (and
 * for a NaN coordinate, which a NaN grid value gives). */
static double grid_pixel(const float *plane, int64_t h, int64_t w, double y, double x)
{
	if (!(y >= 0.0 && y <= (double)(h - 1) && x >= 0.0 && x <= (double)(w - 1)))
		return 0.0;
	return (double)plane[(int64_t)y * w + (int64_t)x];
}

/* One bicubic tap: its integer coordinate passed through the padding mode. */
static double grid_cubic_pixel(const float *plane, int64_t h, int64_t w, double y, double x, int padding,
			       int align_corners)
{
	return grid_pixel(plane, h, w, grid_pad_coord(y, h, padding, align_corners),
			  grid_pad_coord(x, w, padding, align_corners));
}

void rt_grid_sample(float *y, const float *x, const float *grid, int64_t n, int64_t c, int64_t h, int64_t w,
		    int64_t ho, int64_t wo, int mode, int padding, int align_corners)
{
	for (int64_t b = 0; b < n; b++)
		for (int64_t p = 0; p < ho * wo; p++) {
			const float *g = grid + (b * ho * wo + p) * 2;
			double gx = grid_unnormalize(g[0], w, align_corners);
			double gy = grid_unnormalize(g[1], h, align_corners);
			if (mode != RT_GRID_CUBIC) {
				gx = grid_pad_coord(gx, w, padding, align_corners);
				gy = grid_pad_coord(gy, h, padding, align_corners);
			}
			for (int64_t ch = 0; ch < c; ch++) {
				const float *plane = x + (b * c + ch) * h * w;
				double v;
				if (mode == RT_GRID_NEAREST) {
					v = grid_pixel(plane, h, w, nearbyint(gy), nearbyint(gx));
				} else if (mode == RT_GRID_LINEAR) {
					double fx = floor(gx), fy = floor(gy), rx = gx - fx, ry = gy - fy;
					v = (1 - ry) * ((1 - rx) * grid_pixel(plane, h, w, fy, fx) +
							rx * grid_pixel(plane, h, w, fy, fx + 1)) +
					    ry * ((1 - rx) * grid_pixel(plane, h, w, fy + 1, fx) +
						  rx * grid_pixel(plane, h, w, fy + 1, fx + 1));
				} else {
					double fx = floor(gx), fy = floor(gy), rx = gx - fx, ry = gy - fy;
					v = 0.0;
					for (int i = 0; i < 4; i++) {
						double row = 0.0;
						for (int j = 0; j < 4; j++)
							row += cubic_weight(fabs(rx - (double)(j - 1)), -0.75) *
							       grid_cubic_pixel(plane, h, w, fy - 1 + i, fx - 1 + j, padding,
										align_corners);
						v += cubic_weight(fabs(ry - (double)(i - 1)), -0.75) * row;
					}
				}
				y[(b * c + ch) * ho * wo + p] = (float)v;
			}
		}
}

/* ---- RoiAlign ---------------------------------------------------------------- */

/* The bilinear sample of a plane [h, w] at (yy, xx) as its four weighted
 * corners; 0 samples (all weights 0) beyond one pixel outside the image. */
static void roi_corners(const float *plane, int64_t h, int64_t w, double yy, double xx, double v[4])
{
	v[0] = v[1] = v[2] = v[3] = 0.0;
	if (!(yy >= -1.0 && yy <= (double)h && xx >= -1.0 && xx <= (double)w))
		return;         /* beyond the image (or NaN) */
	if (yy < 0.0)
		yy = 0.0;
	if (xx < 0.0)
		xx = 0.0;
	int64_t y0 = (int64_t)yy, x0 = (int64_t)xx, y1, x1;
	if (y0 >= h - 1) {
		y0 = y1 = h - 1;
		yy = (double)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= w - 1) {
		x0 = x1 = w - 1;
		xx = (double)x0;
	} else {
		x1 = x0 + 1;
	}
	double ly = yy - (double)y0, lx = xx - (double)x0, hy = 1.0 - ly, hx = 1.0 - lx;
	v[0] = hy * hx * plane[y0 * w + x0];
	v[1] = hy * lx * plane[y0 * w + x1];
	v[2] = ly * hx * plane[y1 * w + x0];
	v[3] = ly * lx * plane[y1 * w + x1];
}

/* Adaptive samples per bin axis: ceil(bin size); none for an empty, negative
 * or NaN bin, and at most 2^20. */
static int64_t roi_grid(double bin)
{
	double g = ceil(bin);
	return g >= 1.0 ? (g < 1048576.0 ? (int64_t)g : 1048576) : 0;
}

int rt_roi_align(float *y, const float *x, const float *rois, const int64_t *batch, int64_t n, int64_t c,
		 int64_t h, int64_t w, int64_t nroi, int64_t oh, int64_t ow, int64_t sampling_ratio,
		 float spatial_scale, int half_pixel, int max_mode)
{
	for (int64_t r = 0; r < nroi; r++)
		if (batch[r] < 0 || batch[r] >= n)
			return RT_ERR_INDEX;
	double off = half_pixel ? 0.5 : 0.0;
	for (int64_t r = 0; r < nroi; r++) {
		const float *box = rois + r * 4;
		double x0 = box[0] * (double)spatial_scale - off, y0 = box[1] * (double)spatial_scale - off;
		double x1 = box[2] * (double)spatial_scale - off, y1 = box[3] * (double)spatial_scale - off;
		double rw = x1 - x0, rh = y1 - y0;
		if (!half_pixel) {      /* output_half_pixel: a box at least one pixel wide */
			rw = rw > 1.0 ? rw : 1.0;
			rh = rh > 1.0 ? rh : 1.0;
		}
		double bh = rh / (double)oh, bw = rw / (double)ow;
		int64_t gh = sampling_ratio > 0 ? sampling_ratio : roi_grid(rh / (double)oh);
		int64_t gw = sampling_ratio > 0 ? sampling_ratio : roi_grid(rw / (double)ow);
		double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
		for (int64_t ch = 0; ch < c; ch++) {
			const float *plane = x + (batch[r] * c + ch) * h * w;
			float *out = y + (r * c + ch) * oh * ow;
			for (int64_t ph = 0; ph < oh; ph++)
				for (int64_t pw = 0; pw < ow; pw++) {
					double acc = 0.0;
					int first = 1;
					for (int64_t iy = 0; iy < gh; iy++) {
						double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
						for (int64_t ix = 0; ix < gw; ix++) {
							double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
							double v[4];
							roi_corners(plane, h, w, yy, xx, v);
							if (!max_mode) {
								acc += v[0] + v[1] + v[2] + v[3];
								continue;
							}
							/* max: the largest weighted corner of each sample */
							double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
							acc = first || m > acc ? m : acc;
							first = 0;
						}
					}
					out[ph * ow + pw] = (float)(max_mode ? acc : acc / count);
				}
		}
	}
	return RT_OK;
}
