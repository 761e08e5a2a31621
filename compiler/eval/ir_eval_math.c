/* ir_eval_math.c: the reference interpreter's linear algebra, sampling,
 * signal and sequence operators, and the training optimisers (ir_eval_ops.c's
 * table ev_ops lists them): Det, Einsum, Resize, GridSample, RoiAlign, DFT,
 * STFT, the window generators and MelWeightMatrix, LRN, MVN,
 * ReverseSequence, MaxUnpool, Momentum/Adagrad/Adam and TfIdfVectorizer.
 *
 * Written like ir_eval_ops.c: from each operator's row of ops.def and the
 * ONNX operator specification, in double, by loops over concrete indices.
 * Nothing here comes from a pass, an emitter or libcellrt. */
#include "ir_eval_ops.h"

#include <math.h>
#include <string.h>

/* ---- linear algebra ---------------------------------------------------------------------- */

/* Det: LU with partial pivoting of each [M, M] matrix, in double. */
int ev_det(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	if (X->rank < 2 || X->d[X->rank - 1] != X->d[X->rank - 2])
		return ev_stop(r, n, "Det of a matrix that is not square");
	int64_t M = X->d[X->rank - 1], cnt = ev_prod(X->d, X->rank - 2);
	ev_tensor *Y = ev_new(r, X->dt, X->rank - 2, X->d);
	double *a = arena_array(r->A, (size_t)(M * M + 1), sizeof *a);
	for (int64_t q = 0; q < cnt; q++) {
		memcpy(a, X->x + q * M * M, (size_t)(M * M) * sizeof *a);
		double det = 1;
		for (int64_t k = 0; k < M && det != 0; k++) {
			int64_t p = k;
			for (int64_t i = k + 1; i < M; i++)
				if (fabs(a[i * M + k]) > fabs(a[p * M + k]))
					p = i;
			if (a[p * M + k] == 0) {
				det = 0;
				break;
			}
			if (p != k) {
				for (int64_t j = 0; j < M; j++) {
					double t = a[k * M + j];
					a[k * M + j] = a[p * M + j];
					a[p * M + j] = t;
				}
				det = -det;
			}
			det *= a[k * M + k];
			for (int64_t i = k + 1; i < M; i++) {
				double f = a[i * M + k] / a[k * M + k];
				for (int64_t j = k; j < M; j++)
					a[i * M + j] -= f * a[k * M + j];
			}
		}
		Y->x[q] = ev_as_type(Y->dt, det);
	}
	out[0] = Y;
	return 0;
}

/* Einsum: every assignment of the equation's labels visited once; the
 * product of the operands added to the output element its output labels
 * name.  "..." stands for the axes the operands do not label (broadcast). */
#define EIN_LABELS 64
typedef struct ein_term {
	int n;                          /* axes */
	int lab[IR_MAX_RANK];           /* the label of each axis */
} ein_term;

/* Parses one term of s (up to ',', '-' or the end) of an operand of rank R
 * (-1: the output); "..." stands for *k axes (R minus the named ones for
 * an operand), labelled right-aligned among the ell axes the widest "..."
 * has (labels 52..).  Letters: 'A'..'Z' 0..25, 'a'..'z' 26..51 (numpy's
 * alphabetical order of the implicit output). */
static const char *ein_term_parse(const char *s, int R, int ell, int *k, ein_term *t, int *ok)
{
	int named = 0;
	for (const char *p = s; *p && *p != ',' && *p != '-'; p++)
		named += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
	*k = R >= 0 ? R - named : ell;
	t->n = 0;
	for (; *s && *s != ',' && *s != '-'; s++) {
		if (*s == ' ')
			continue;
		if (*s == '.') {
			if (strncmp(s, "...", 3) || *k < 0 || *k > ell) {
				*ok = 0;
				return s;
			}
			for (int i = 0; i < *k && t->n < IR_MAX_RANK; i++)
				t->lab[t->n++] = 52 + ell - *k + i;
			s += 2;
			continue;
		}
		int l = *s >= 'A' && *s <= 'Z' ? *s - 'A' : *s >= 'a' && *s <= 'z' ? 26 + *s - 'a' : -1;
		if (l < 0 || t->n >= IR_MAX_RANK) {
			*ok = 0;
			return s;
		}
		t->lab[t->n++] = l;
	}
	return s;
}

/* Parses the operands' terms of eq into t; returns where the output part
 * starts ("->..." or the end). */
static const char *ein_operands(const char *eq, const ir_node *n, ev_tensor **in, int ell, int *wide, ein_term *t,
				int *ok)
{
	const char *s = eq;
	*wide = 0;
	for (int q = 0; q < n->nin && *ok; q++) {
		int k;
		s = ein_term_parse(s, in[q]->rank, ell, &k, &t[q], ok);
		*wide = k > *wide ? k : *wide;
		if (*s == ',')
			s++;
	}
	return s;
}

int ev_einsum(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const char *eq = ir_attr_string(n, "equation", NULL), *s;
	if (!eq || n->nin > 16)
		return ev_stop(r, n, "Einsum without an equation");
	ein_term t[16], o = {0};
	int ok = 1, ell, nop = n->nin, k;
	int64_t size[EIN_LABELS];
	int count[EIN_LABELS] = {0};
	ein_operands(eq, n, in, IR_MAX_RANK, &ell, t, &ok);         /* the widest "..." */
	s = ein_operands(eq, n, in, ell, &k, t, &ok);
	for (int i = 0; i < EIN_LABELS; i++)
		size[i] = -1;
	for (int q = 0; q < nop && ok; q++) {
		ok = t[q].n == in[q]->rank;
		for (int i = 0; ok && i < t[q].n; i++) {
			int l = t[q].lab[i];
			int64_t dsz = in[q]->d[i];
			if (size[l] < 0 || size[l] == 1)        /* a size 1 broadcasts */
				size[l] = dsz;
			else if (dsz != size[l] && dsz != 1)
				ok = 0;
			count[l]++;
		}
	}
	if (ok && *s == '-' && s[1] == '>') {
		ein_term_parse(s + 2, -1, ell, &k, &o, &ok);
	} else if (ok) {                /* implicit output: "..." then the labels used once, sorted */
		for (int i = 0; i < ell; i++)
			o.lab[o.n++] = 52 + i;
		for (int l = 0; l < 52 && o.n < IR_MAX_RANK; l++)
			if (count[l] == 1)
				o.lab[o.n++] = l;
	}
	for (int i = 0; ok && i < o.n; i++)
		ok = size[o.lab[i]] >= 0;
	if (!ok)
		return ev_noref(r, n, "Einsum equation '%s' the reference cannot read", eq);
	int labs[EIN_LABELS], nl = 0;
	for (int l = 0; l < EIN_LABELS; l++)
		if (size[l] >= 0)
			labs[nl++] = l;
	int64_t od[IR_MAX_RANK], ld[EIN_LABELS], li[EIN_LABELS] = {0}, v[EIN_LABELS] = {0};
	for (int i = 0; i < o.n; i++)
		od[i] = size[o.lab[i]];
	for (int i = 0; i < nl; i++)
		ld[i] = size[labs[i]];
	ev_tensor *Y = ev_new(r, n->out[0]->dtype, o.n, od);
	double *acc = arena_array(r->A, (size_t)(Y->n ? Y->n : 1), sizeof *acc);
	int64_t total = ev_prod(ld, nl);
	for (int64_t q = 0; q < total; q++, ev_next_index(li, ld, nl)) {
		for (int i = 0; i < nl; i++)
			v[labs[i]] = li[i];
		double p = 1;
		for (int j = 0; j < nop; j++) {
			int64_t off = 0;
			for (int i = 0; i < t[j].n; i++)
				off = off * in[j]->d[i] + (in[j]->d[i] == 1 ? 0 : v[t[j].lab[i]]);
			p *= in[j]->x[off];
		}
		int64_t off = 0;
		for (int i = 0; i < o.n; i++)
			off = off * od[i] + v[o.lab[i]];
		acc[off] += p;
	}
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, acc[e]);
	out[0] = Y;
	return 0;
}

/* ---- sampling: Resize, GridSample --------------------------------------------------------- */

/* The cubic convolution weight of distance t with coefficient a (Keys). */
static double cubic_w(double t, double a)
{
	t = fabs(t);
	if (t <= 1)
		return ((a + 2) * t - (a + 3)) * t * t + 1;
	if (t < 2)
		return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
	return 0;
}

/* One axis of a Resize: input size `in`, output size `out`, scale, the
 * roi's start and end (tf_crop_and_resize). */
typedef struct rs_axis {
	int64_t in, out;
	double scale, start, end;
} rs_axis;

/* The input coordinate of output x (coordinate_transformation_mode); NAN
 * for a tf_crop_and_resize coordinate outside the input (extrapolated). */
static double rs_coord(const char *ctm, const rs_axis *A, int64_t x)
{
	double s = A->scale, in = (double)A->in, out = (double)A->out;
	if (!strcmp(ctm, "align_corners"))     /* the resized length unrounded: in * scale */
		return A->out == 1 ? 0 : (double)x * (in - 1) / (s * in - 1);
	if (!strcmp(ctm, "asymmetric"))
		return (double)x / s;
	if (!strcmp(ctm, "tf_half_pixel_for_nn"))
		return ((double)x + 0.5) / s;
	if (!strcmp(ctm, "pytorch_half_pixel"))
		return A->out > 1 ? ((double)x + 0.5) / s - 0.5 : 0;
	if (!strcmp(ctm, "half_pixel_symmetric")) {
		double adj = out / (s * in), off = in / 2 * (1 - adj);
		return off + ((double)x + 0.5) / s - 0.5;
	}
	if (!strcmp(ctm, "tf_crop_and_resize")) {
		/* length_resized unrounded as for align_corners: the output size
		 * where the sizes input gave the scale */
		double len = s * in;
		double c = len > 1 ? A->start * (in - 1) + (double)x * (A->end - A->start) * (in - 1) / (len - 1)
				   : 0.5 * (A->start + A->end) * (in - 1);
		return c < 0 || c > in - 1 ? NAN : c;
	}
	return ((double)x + 0.5) / s - 0.5;     /* half_pixel */
}

/* The taps (input indices and weights) of coordinate c on an axis of size m. */
static int rs_taps(const ir_node *n, const char *mode, double c, int64_t m, int64_t *ix, double *w)
{
	if (!strcmp(mode, "nearest")) {
		const char *nm = ir_attr_string(n, "nearest_mode", "round_prefer_floor");
		double f = floor(c);
		int64_t i = !strcmp(nm, "floor") ? (int64_t)f : !strcmp(nm, "ceil") ? (int64_t)ceil(c) :
			    c - f == 0.5 ? (int64_t)(!strcmp(nm, "round_prefer_ceil") ? f + 1 : f) : (int64_t)floor(c + 0.5);
		ix[0] = i < 0 ? 0 : i >= m ? m - 1 : i;
		w[0] = 1;
		return 1;
	}
	int64_t i0 = (int64_t)floor(c);
	double f = c - floor(c);
	int k = 0;
	if (!strcmp(mode, "linear")) {
		ix[0] = i0;
		w[0] = 1 - f;
		ix[1] = i0 + 1;
		w[1] = f;
		k = 2;
	} else {
		double a = ir_attr_float(n, "cubic_coeff_a", -0.75f), sum = 0;
		int excl = (int)ir_attr_int(n, "exclude_outside", 0);
		for (int t = 0; t < 4; t++) {
			ix[t] = i0 - 1 + t;
			w[t] = cubic_w(f - (t - 1), a);
			if (excl && (ix[t] < 0 || ix[t] >= m))
				w[t] = 0;
			sum += w[t];
		}
		for (int t = 0; excl && t < 4; t++)
			w[t] /= sum;
		k = 4;
	}
	for (int t = 0; t < k; t++)         /* the edge repeats beyond the input */
		ix[t] = ix[t] < 0 ? 0 : ix[t] >= m ? m - 1 : ix[t];
	return k;
}

/* Resize: sizes (input 3) or scales (input 2) on axes (default all), with
 * keep_aspect_ratio_policy; each output element the separable sum of its
 * taps on every axis. */
int ev_resize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *roi = n->nin > 1 ? in[1] : NULL, *sc = n->nin > 2 ? in[2] : NULL;
	const ev_tensor *sz = n->nin > 3 ? in[3] : NULL;
	const char *mode = ir_attr_string(n, "mode", "nearest");
	const char *ctm = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel");
	const char *pol = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch");
	ir_attr *axa = ir_attr_find(n, "axes");
	int R = X->rank, na = axa ? axa->n : R, ax[IR_MAX_RANK];
	rs_axis A[IR_MAX_RANK];
	if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic"))
		return ev_noref(r, n, "Resize mode %s", mode);
	for (int a = 0; a < R; a++)
		A[a] = (rs_axis){.in = X->d[a], .out = X->d[a], .scale = 1, .start = 0, .end = 1};
	for (int i = 0; i < na; i++)
		ax[i] = axa ? (int)ev_norm_axis(axa->ints[i], R) : i;
	if (sz && sz->n) {
		if (sz->n != na)
			return ev_stop(r, n, "sizes of %lld values for %d axes", (long long)sz->n, na);
		double keep = !strcmp(pol, "not_larger") ? INFINITY : -INFINITY;
		for (int i = 0; i < na; i++) {
			double q = (double)ev_ival(sz, i) / (double)X->d[ax[i]];
			keep = !strcmp(pol, "not_larger") ? fmin(keep, q) : fmax(keep, q);
		}
		for (int i = 0; i < na; i++) {
			rs_axis *p = &A[ax[i]];
			if (!strcmp(pol, "stretch")) {
				p->out = ev_ival(sz, i);
				p->scale = (double)p->out / (double)p->in;
			} else {
				p->scale = keep;
				p->out = (int64_t)floor(keep * (double)p->in + 0.5);
			}
		}
	} else if (sc && sc->n) {
		if (sc->n != na)
			return ev_stop(r, n, "scales of %lld values for %d axes", (long long)sc->n, na);
		for (int i = 0; i < na; i++) {
			/* the size as ONNX Runtime computes it (upsamplebase.h,
			 * ComputeOutputShape): the float32 product, truncated */
			float len = (float)((float)sc->x[i] * (float)X->d[ax[i]]);
			if (!(len >= 0.0f && len < 2147483648.0f))
				return ev_stop(r, n, "scale %g of axis %d gives no size", sc->x[i], ax[i]);
			A[ax[i]].scale = (double)(float)sc->x[i];
			A[ax[i]].out = (int64_t)len;
		}
	} else {
		return ev_stop(r, n, "Resize without scales or sizes");
	}
	for (int i = 0; roi && roi->n == 2 * na && i < na; i++) {
		A[ax[i]].start = roi->x[i];
		A[ax[i]].end = roi->x[na + i];
	}
	if (ir_attr_int(n, "antialias", 0) && strcmp(mode, "nearest"))
		for (int a = 0; a < R; a++)
			if (A[a].scale < 1)
				return ev_noref(r, n, "Resize with antialias when downscaling");
	int64_t od[IR_MAX_RANK];
	for (int a = 0; a < R; a++)
		od[a] = A[a].out;
	ev_tensor *Y = ev_new(r, X->dt, R, od);
	double extra = ir_attr_float(n, "extrapolation_value", 0.0f);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < Y->n; e++, ev_next_index(idx, od, R)) {
		int64_t tix[IR_MAX_RANK][4], cnt[IR_MAX_RANK], ti[IR_MAX_RANK] = {0};
		double tw[IR_MAX_RANK][4];
		int outside = 0;
		for (int a = 0; a < R; a++) {
			double c = rs_coord(ctm, &A[a], idx[a]);
			outside |= isnan(c);
			cnt[a] = outside ? 1 : rs_taps(n, mode, c, A[a].in, tix[a], tw[a]);
		}
		if (outside) {
			Y->x[e] = ev_as_type(Y->dt, extra);
			continue;
		}
		double v = 0;
		for (int64_t q = 0; q < ev_prod(cnt, R); q++, ev_next_index(ti, cnt, R)) {
			double w = 1;
			int64_t off = 0;
			for (int a = 0; a < R; a++) {
				w *= tw[a][ti[a]];
				off = off * X->d[a] + tix[a][ti[a]];
			}
			v += w * X->x[off];
		}
		Y->x[e] = ev_as_type(Y->dt, v);
	}
	out[0] = Y;
	return 0;
}

/* x reflected into [lo, hi] (GridSample's reflection padding). */
static double gs_reflect(double x, double lo, double hi)
{
	double rng = hi - lo;
	if (rng <= 0)
		return lo;
	if (x < lo) {
		double dx = lo - x, k = floor(dx / rng), rm = dx - k * rng;
		return fmod(k, 2) == 0 ? lo + rm : hi - rm;
	}
	if (x > hi) {
		double dx = x - hi, k = floor(dx / rng), rm = dx - k * rng;
		return fmod(k, 2) == 0 ? hi - rm : lo + rm;
	}
	return x;
}

/* The pixel of image x [H, W] at (i, j) under padding_mode. */
static double gs_pixel(const double *x, int64_t H, int64_t W, int64_t i, int64_t j, const char *pad, const double *bd)
{
	if (!strcmp(pad, "zeros"))
		return i >= 0 && i < H && j >= 0 && j < W ? x[i * W + j] : 0;
	if (!strcmp(pad, "border")) {
		i = i < 0 ? 0 : i >= H ? H - 1 : i;
		j = j < 0 ? 0 : j >= W ? W - 1 : j;
	} else {
		i = (int64_t)gs_reflect((double)i, bd[1], bd[3]);
		j = (int64_t)gs_reflect((double)j, bd[0], bd[2]);
	}
	return x[i * W + j];
}

/* GridSample (2-D): Y[n, c, h, w] = X[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1]. */
int ev_gridsample(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *G = in[1];
	const char *mode = ir_attr_string(n, "mode", "linear"), *pad = ir_attr_string(n, "padding_mode", "zeros");
	int ac = (int)ir_attr_int(n, "align_corners", 0);
	if (X->rank != 4 || G->rank != 4)
		return ev_noref(r, n, "GridSample of rank %d", X->rank);
	int cubic = !strcmp(mode, "cubic") || !strcmp(mode, "bicubic"), nearest = !strcmp(mode, "nearest");
	int64_t N = X->d[0], C = X->d[1], H = X->d[2], W = X->d[3], Ho = G->d[1], Wo = G->d[2];
	int64_t od[4] = {N, C, Ho, Wo};
	ev_tensor *Y = ev_new(r, X->dt, 4, od);
	double bd[4] = {ac ? 0 : -0.5, ac ? 0 : -0.5, ac ? (double)W - 1 : (double)W - 0.5, ac ? (double)H - 1 : (double)H - 0.5};
	for (int64_t b = 0; b < N; b++)
		for (int64_t h = 0; h < Ho; h++)
			for (int64_t w = 0; w < Wo; w++) {
				const double *gp = G->x + ((b * Ho + h) * Wo + w) * 2;
				double x = ac ? (gp[0] + 1) / 2 * (double)(W - 1) : ((gp[0] + 1) * (double)W - 1) / 2;
				double y = ac ? (gp[1] + 1) / 2 * (double)(H - 1) : ((gp[1] + 1) * (double)H - 1) / 2;
				/* the coordinate itself is padded for linear and nearest; cubic
				 * pads each of its taps alone (PyTorch's and onnx's reading) */
				if (!cubic && !strcmp(pad, "border")) {
					x = fmin(fmax(x, 0), (double)W - 1);
					y = fmin(fmax(y, 0), (double)H - 1);
				} else if (!cubic && !strcmp(pad, "reflection")) {
					x = gs_reflect(x, bd[0], bd[2]);
					y = gs_reflect(y, bd[1], bd[3]);
				}
				for (int64_t c = 0; c < C; c++) {
					const double *img = X->x + (b * C + c) * H * W;
					double v = 0;
					if (nearest) {
						v = gs_pixel(img, H, W, (int64_t)nearbyint(y), (int64_t)nearbyint(x), pad, bd);
					} else {
						int k = cubic ? 4 : 2;
						int64_t x0 = (int64_t)floor(x) - (cubic ? 1 : 0), y0 = (int64_t)floor(y) - (cubic ? 1 : 0);
						double fx = x - floor(x), fy = y - floor(y), wx[4], wy[4];
						for (int t = 0; t < k; t++) {
							wx[t] = cubic ? cubic_w(fx - (t - 1), -0.75) : t ? fx : 1 - fx;
							wy[t] = cubic ? cubic_w(fy - (t - 1), -0.75) : t ? fy : 1 - fy;
						}
						for (int i = 0; i < k; i++)
							for (int j = 0; j < k; j++)
								v += wy[i] * wx[j] * gs_pixel(img, H, W, y0 + i, x0 + j, pad, bd);
					}
					Y->x[((b * C + c) * Ho + h) * Wo + w] = ev_as_type(Y->dt, v);
				}
			}
	out[0] = Y;
	return 0;
}

/* RoiAlign: per roi [x1 y1 x2 y2] (times spatial_scale, less half a pixel
 * with half_pixel) of image batch_indices[r], each output bin the average
 * (or max) of sampling_ratio^2 bilinear samples (adaptive: ceil(roi size /
 * output size)); a sample beyond a pixel outside the image is 0; max
 * mode takes the largest weighted corner (ONNX Runtime's reading, which
 * the official data follow). */
int ev_roialign(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *rois = in[1], *bi = in[2];
	int64_t oh = ir_attr_int(n, "output_height", 1), ow = ir_attr_int(n, "output_width", 1);
	int64_t sr = ir_attr_int(n, "sampling_ratio", 0), C = X->d[1], H = X->d[2], W = X->d[3], R = rois->d[0];
	double scale = ir_attr_float(n, "spatial_scale", 1.0f);
	int half = !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel");
	int is_max = !strcmp(ir_attr_string(n, "mode", "avg"), "max");
	int64_t od[4] = {R, C, oh, ow};
	ev_tensor *Y = ev_new(r, X->dt, 4, od);
	for (int64_t q = 0; q < R; q++) {
		const double *b = rois->x + q * 4;
		int64_t img = ev_ival(bi, q);
		if (img < 0 || img >= X->d[0])
			return ev_stop(r, n, "batch index %lld outside the batch", (long long)img);
		double off = half ? 0.5 : 0, x0 = b[0] * scale - off, y0 = b[1] * scale - off;
		double rw = b[2] * scale - off - x0, rh = b[3] * scale - off - y0;
		if (!half) {
			rw = fmax(rw, 1);
			rh = fmax(rh, 1);
		}
		double bw = rw / (double)ow, bh = rh / (double)oh;
		int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)oh), gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)ow);
		double cnt = (double)(gh * gw > 1 ? gh * gw : 1);
		for (int64_t c = 0; c < C; c++) {
			const double *im = X->x + (img * C + c) * H * W;
			for (int64_t ph = 0; ph < oh; ph++)
				for (int64_t pw = 0; pw < ow; pw++) {
					double acc = is_max ? -INFINITY : 0;
					int any = 0;
					for (int64_t iy = 0; iy < gh; iy++)
						for (int64_t ix = 0; ix < gw; ix++) {
							double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
							double x = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
							double v[4] = {0, 0, 0, 0};
							if (!(y < -1.0 || y > (double)H || x < -1.0 || x > (double)W)) {
								y = fmax(y, 0);
								x = fmax(x, 0);
								int64_t yl = (int64_t)y, xl = (int64_t)x, yh = yl + 1, xh = xl + 1;
								if (yl >= H - 1) {
									yl = yh = H - 1;
									y = (double)yl;
								}
								if (xl >= W - 1) {
									xl = xh = W - 1;
									x = (double)xl;
								}
								double ly = y - (double)yl, lx = x - (double)xl;
								v[0] = (1 - ly) * (1 - lx) * im[yl * W + xl];
								v[1] = (1 - ly) * lx * im[yl * W + xh];
								v[2] = ly * (1 - lx) * im[yh * W + xl];
								v[3] = ly * lx * im[yh * W + xh];
							}
							if (is_max) {
								for (int t = 0; t < 4; t++)
									acc = any || t ? fmax(acc, v[t]) : v[t];
								any = 1;
							} else {
								acc += v[0] + v[1] + v[2] + v[3];
							}
						}
					Y->x[((q * C + c) * oh + ph) * ow + pw] = ev_as_type(Y->dt, is_max ? acc : acc / cnt);
				}
		}
	}
	out[0] = Y;
	return 0;
}

/* ---- signals, normalisation across channels, sequences, unpooling ----------------------------- */

/* DFT of X [.., 1 or 2] along axis (default 1): n = dft_length (zero
 * padded or cut), inverse (conjugate, / n), onesided (bins 0 .. n/2). */
int ev_dft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *L = n->nin > 1 ? in[1] : NULL;
	int R = X->rank, a = (int)ev_norm_axis(ir_attr_int(n, "axis", 1), R);
	int inv = (int)ir_attr_int(n, "inverse", 0), one = (int)ir_attr_int(n, "onesided", 0);
	int64_t cplx = X->d[R - 1];
	if (R < 3 || a < 1 || a > R - 2 || (cplx != 1 && cplx != 2))
		return ev_stop(r, n, "DFT of X of rank %d along axis %d", R, a);
	int64_t len = L ? ev_ival(L, 0) : X->d[a], m = X->d[a], bins = one ? len / 2 + 1 : len, d[IR_MAX_RANK];
	memcpy(d, X->d, sizeof d);
	d[a] = bins;
	d[R - 1] = 2;
	ev_tensor *Y = ev_new(r, X->dt, R, d);
	int64_t outer = ev_prod(X->d, a), inner = ev_prod(X->d + a + 1, R - a - 2);  /* inner: the axes between, not the last */
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++)
			for (int64_t k = 0; k < bins; k++) {
				double re = 0, im = 0;
				for (int64_t t = 0; t < len && t < m; t++) {
					const double *xv = X->x + ((p * m + t) * inner + s) * cplx;
					double ang = (inv ? 2 : -2) * 3.14159265358979323846 * (double)((k * t) % len) / (double)len;
					double xr = xv[0], xi = cplx == 2 ? xv[1] : 0;
					re += xr * cos(ang) - xi * sin(ang);
					im += xr * sin(ang) + xi * cos(ang);
				}
				double *yv = Y->x + ((p * bins + k) * inner + s) * 2;
				yv[0] = ev_as_type(Y->dt, inv ? re / (double)len : re);
				yv[1] = ev_as_type(Y->dt, inv ? im / (double)len : im);
			}
	out[0] = Y;
	return 0;
}

/* STFT: DFTs of the frames of signal [B, L, 1 or 2] every frame_step
 * (input 1), each frame_length (input 3, or the window's length) long and
 * times window (input 2); onesided (default 1): bins 0 .. frame_length / 2. */
int ev_stft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *Win = n->nin > 2 ? in[2] : NULL, *FL = n->nin > 3 ? in[3] : NULL;
	int64_t step = ev_ival(in[1], 0), fl = FL ? ev_ival(FL, 0) : Win ? Win->n : 0;
	int one = (int)ir_attr_int(n, "onesided", 1);
	if (X->rank != 3 || fl < 1 || step < 1 || fl > X->d[1])
		return ev_stop(r, n, "STFT of X of rank %d, frames of %lld every %lld", X->rank, (long long)fl,
			       (long long)step);
	int64_t B = X->d[0], L = X->d[1], cplx = X->d[2], frames = (L - fl) / step + 1, bins = one ? fl / 2 + 1 : fl;
	int64_t d[4] = {B, frames, bins, 2};
	ev_tensor *Y = ev_new(r, X->dt, 4, d);
	for (int64_t b = 0; b < B; b++)
		for (int64_t f = 0; f < frames; f++)
			for (int64_t k = 0; k < bins; k++) {
				double re = 0, im = 0;
				for (int64_t t = 0; t < fl; t++) {
					const double *xv = X->x + (b * L + f * step + t) * cplx;
					double w = Win ? Win->x[t] : 1, ang = -2 * 3.14159265358979323846 * (double)((k * t) % fl) / (double)fl;
					double xr = xv[0] * w, xi = cplx == 2 ? xv[1] * w : 0;
					re += xr * cos(ang) - xi * sin(ang);
					im += xr * sin(ang) + xi * cos(ang);
				}
				Y->x[((b * frames + f) * bins + k) * 2] = ev_as_type(Y->dt, re);
				Y->x[((b * frames + f) * bins + k) * 2 + 1] = ev_as_type(Y->dt, im);
			}
	out[0] = Y;
	return 0;
}

/* HannWindow, HammingWindow, BlackmanWindow: Y[k] for k = 0 .. size - 1
 * (input 0, a scalar), the cosine sums of ops.def over N = size (periodic,
 * the default) or size - 1, of type output_datatype (default float).
 * infer folds them (size must be a constant): a compiled graph holds none;
 * the reference runs them in a graph as loaded (eval_ref). */
int ev_window(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const double pi = 3.14159265358979323846;
	int64_t size = ev_ival(in[0], 0);
	if (in[0]->n != 1 || size < 0)
		return ev_stop(r, n, "%s of size %lld", ir_op_name(n->op), (long long)size);
	double N = (double)(ir_attr_int(n, "periodic", 1) ? size : size - 1);
	ev_tensor *Y = ev_new(r, (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32), 1, &size);
	for (int64_t k = 0; k < size; k++) {
		double t = 2 * pi * (double)k / N, v;
		if (n->op == OP_HANNWINDOW)
			v = 0.5 - 0.5 * cos(t);
		else if (n->op == OP_HAMMINGWINDOW)
			v = 25.0 / 46.0 - 21.0 / 46.0 * cos(t);
		else
			v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t);
		Y->x[k] = ev_as_type(Y->dt, v);
	}
	out[0] = Y;
	return 0;
}

static double hz_to_mel(double f) { return 2595 * log10(1 + f / 700); }
static double mel_to_hz(double m) { return 700 * (pow(10, m / 2595) - 1); }

/* MelWeightMatrix (inputs num_mel_bins, dft_length, sample_rate,
 * lower_edge_hertz, upper_edge_hertz; output_datatype): Y [dft_length / 2 +
 * 1, num_mel_bins] holds triangular filters of peak 1.  Their edges, as the
 * ONNX operator's reference defines them (the official data): the mel
 * scale from mel(lower) in num_mel_bins + 2 steps of (mel(upper) -
 * mel(lower)) / (num_mel_bins + 2), each point back in hertz and to the DFT
 * bin floor((dft_length + 1) f / sample_rate).  Filter i rises from bin
 * b[i] to 1 at b[i + 1] (1 there alone when they coincide) and falls to 0
 * at b[i + 2].  infer folds it (constant inputs): as ev_window. */
int ev_melweight(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t nmel = ev_ival(in[0], 0), len = ev_ival(in[1], 0), rate = ev_ival(in[2], 0);
	double lo = in[3]->x[0], hi = in[4]->x[0];
	if (nmel < 0 || len < 0 || rate <= 0)
		return ev_stop(r, n, "MelWeightMatrix of %lld bins, a DFT of %lld, a rate of %lld", (long long)nmel,
			       (long long)len, (long long)rate);
	int64_t d[2] = {len / 2 + 1, nmel};
	ev_tensor *Y = ev_new(r, (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32), 2, d);
	int64_t *b = arena_array(r->A, (size_t)nmel + 2, sizeof *b);
	double step = (hz_to_mel(hi) - hz_to_mel(lo)) / (double)(nmel + 2);
	for (int64_t k = 0; k < nmel + 2; k++)
		b[k] = (int64_t)floor((double)(len + 1) * mel_to_hz(hz_to_mel(lo) + (double)k * step) / (double)rate);
	for (int64_t i = 0; i < nmel; i++) {
		int64_t l = b[i], c = b[i + 1], h = b[i + 2];
		if ((l <= c && (l < 0 || c >= d[0])) || (c < h && (c < 0 || h > d[0])))
			return ev_stop(r, n, "mel filter %lld spans DFT bins %lld .. %lld of %lld", (long long)i,
				       (long long)l, (long long)h, (long long)d[0]);
		for (int64_t j = l; j <= c; j++)
			Y->x[j * nmel + i] = c == l ? 1 : (double)(j - l) / (double)(c - l);
		for (int64_t j = c; j < h; j++)
			Y->x[j * nmel + i] = (double)(h - j) / (double)(h - c);
	}
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, Y->x[e]);
	out[0] = Y;
	return 0;
}

/* LRN: X / (bias + alpha / size * the sum of X^2 over the channels c -
 * floor((size - 1) / 2) .. c + ceil((size - 1) / 2))^beta. */
int ev_lrn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t size = ir_attr_int(n, "size", 1), C = X->d[1], sp = ev_prod(X->d + 2, X->rank - 2);
	double alpha = ir_attr_float(n, "alpha", 1e-4f), beta = ir_attr_float(n, "beta", 0.75f);
	double bias = ir_attr_float(n, "bias", 1.0f);
	ev_tensor *Y = ev_new_like(r, X->dt, X);
	for (int64_t b = 0; b < X->d[0]; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t e = 0; e < sp; e++) {
				double sq = 0;
				for (int64_t q = c - (size - 1) / 2; q <= c + size / 2; q++)
					if (q >= 0 && q < C)
						sq += X->x[(b * C + q) * sp + e] * X->x[(b * C + q) * sp + e];
				int64_t at = (b * C + c) * sp + e;
				Y->x[at] = ev_as_type(Y->dt, X->x[at] / pow(bias + alpha / (double)size * sq, beta));
			}
	out[0] = Y;
	return 0;
}

/* MeanVarianceNormalization over axes (default 0, 2, 3), as ops.def states it. */
int ev_mvn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *aa = ir_attr_find(n, "axes");
	unsigned char red[IR_MAX_RANK] = {0};
	static const int64_t def[3] = {0, 2, 3};
	for (int i = 0; i < (aa ? aa->n : 3); i++) {
		int64_t a = ev_norm_axis(aa ? aa->ints[i] : def[i], X->rank);
		if (a < 0 || a >= X->rank)
			return ev_stop(r, n, "MeanVarianceNormalization axis out of range");
		red[a] = 1;
	}
	ev_tensor k0 = {.rank = X->rank};       /* the statistics' shape: 1 on the reduced axes */
	for (int i = 0; i < X->rank; i++)
		k0.d[i] = red[i] ? 1 : X->d[i];
	int64_t ns = ev_prod(k0.d, k0.rank), idx[IR_MAX_RANK] = {0};
	double *mean = arena_array(r->A, (size_t)ns + 1, sizeof *mean), *var = arena_array(r->A, (size_t)ns + 1, sizeof *var);
	double cnt = (double)X->n / (double)ns;
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank))
		mean[ev_bcast_off(&k0, X->rank, idx)] += X->x[e] / cnt;
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t q = ev_bcast_off(&k0, X->rank, idx);
		var[q] += (X->x[e] - mean[q]) * (X->x[e] - mean[q]) / cnt;
	}
	ev_tensor *Y = ev_new_like(r, X->dt, X);
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t q = ev_bcast_off(&k0, X->rank, idx);
		Y->x[e] = ev_as_type(Y->dt, (X->x[e] - mean[q]) / (sqrt(var[q]) + 1e-9));
	}
	out[0] = Y;
	return 0;
}

/* ReverseSequence: in row b of batch_axis the first lens[b] steps of time_axis reversed. */
int ev_reverseseq(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *Ln = in[1];
	int ba = (int)ir_attr_int(n, "batch_axis", 1), ta = (int)ir_attr_int(n, "time_axis", 0);
	if (ba < 0 || ba >= X->rank || ta < 0 || ta >= X->rank || Ln->n != X->d[ba])
		return ev_stop(r, n, "batch_axis %d, time_axis %d or sequence_lens of another batch", ba, ta);
	ev_tensor *Y = ev_new_like(r, X->dt, X);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t len = ev_ival(Ln, idx[ba]), src[IR_MAX_RANK], off = 0;
		if (len < 0 || len > X->d[ta])
			return ev_stop(r, n, "sequence length %lld outside [0, %lld]", (long long)len, (long long)X->d[ta]);
		memcpy(src, idx, sizeof src);
		if (idx[ta] < len)
			src[ta] = len - 1 - idx[ta];
		for (int i = 0; i < X->rank; i++)
			off = off * X->d[i] + src[i];
		Y->x[e] = X->x[off];
	}
	out[0] = Y;
	return 0;
}

/* MaxUnpool: zeros of output_shape (input 2, or from the pool's geometry) with X written at I. */
int ev_maxunpool(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1], *S = n->nin > 2 ? in[2] : NULL;
	int nsp = X->rank - 2;
	ir_attr *ka = ir_attr_find(n, "kernel_shape");
	int64_t d[IR_MAX_RANK], st[IR_MAX_RANK], p[2 * IR_MAX_RANK];
	if (!ka || ka->n != nsp || (S && S->n != X->rank))
		return ev_stop(r, n, "kernel_shape missing, or output_shape not of rank %d", X->rank);
	ev_ints_or(n, "strides", nsp, 1, st);
	ev_ints_or(n, "pads", 2 * nsp, 0, p);
	int64_t dd[IR_MAX_RANK];        /* the pool's input shape, which the indices address */
	for (int a = 0; a < X->rank; a++) {
		dd[a] = a < 2 ? X->d[a] : (X->d[a] - 1) * st[a - 2] + ka->ints[a - 2] - p[a - 2] - p[nsp + a - 2];
		d[a] = S ? ev_ival(S, a) : dd[a];
	}
	ev_tensor *Y = ev_new(r, X->dt, X->rank, d);
	for (int64_t e = 0; e < X->n; e++) {
		int64_t at = ev_ival(I, e), off = 0, rest = at, c[IR_MAX_RANK];
		for (int a = X->rank - 1; a >= 0; a--) {
			c[a] = rest % dd[a];
			rest /= dd[a];
		}
		for (int a = 0; a < X->rank; a++)
			off = off * d[a] + c[a];
		if (at < 0 || rest || off >= Y->n)
			return ev_stop(r, n, "index %lld outside the output", (long long)at);
		Y->x[off] = X->x[e];
	}
	out[0] = Y;
	return 0;
}

/* ---- optimisers (ai.onnx.preview.training), as the specification writes them ---------------- */

/* Momentum, Adagrad and Adam: R, T, then n tensors each of X, G and the
 * states; outputs the n new X, then the n new states of each kind. */
int ev_optim(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int ns = n->op == OP_ADAM ? 2 : 1, cnt = (n->nin - 2) / (2 + ns);
	double R = in[0]->x[0], T = in[1]->x[0], norm = ir_attr_float(n, "norm_coefficient", 0.0f);
	double alpha = ir_attr_float(n, "alpha", n->op == OP_ADAM ? 0.9f : 0.0f);
	double beta = ir_attr_float(n, "beta", n->op == OP_ADAM ? 0.999f : 0.0f);
	double eps = ir_attr_float(n, "epsilon", 1e-6f);
	int nesterov = !strcmp(ir_attr_string(n, "mode", "standard"), "nesterov");
	if (n->nin != 2 + cnt * (2 + ns) || n->nout > cnt * (1 + ns))
		return ev_stop(r, n, "%s with %d inputs", ir_op_name(n->op), n->nin);
	for (int i = 0; i < cnt; i++) {
		const ev_tensor *X = in[2 + i], *G = in[2 + cnt + i], *V = in[2 + 2 * cnt + i];
		const ev_tensor *H = ns == 2 ? in[2 + 3 * cnt + i] : NULL;
		ev_tensor *Xn = ev_new_like(r, X->dt, X), *Vn = ev_new_like(r, V->dt, V), *Hn = H ? ev_new_like(r, H->dt, H) : NULL;
		for (int64_t e = 0; e < X->n; e++) {
			double gr = G->x[e] + norm * X->x[e], x = X->x[e], v;
			if (n->op == OP_MOMENTUM) {
				v = alpha * V->x[e] + (T > 0 ? beta : 1) * gr;
				x -= R * (nesterov ? gr + alpha * v : v);
			} else if (n->op == OP_ADAGRAD) {
				v = V->x[e] + gr * gr;
				x -= R / (1 + T * ir_attr_float(n, "decay_factor", 0.0f)) * gr / (sqrt(v) + eps);
			} else {
				v = alpha * V->x[e] + (1 - alpha) * gr;
				double h = beta * H->x[e] + (1 - beta) * gr * gr;
				double ra = T > 0 ? R * sqrt(1 - pow(beta, T)) / (1 - pow(alpha, T)) : R;
				x = (1 - ir_attr_float(n, "norm_coefficient_post", 0.0f)) * (x - ra * v / (sqrt(h) + eps));
				Hn->x[e] = ev_as_type(Hn->dt, h);
			}
			Xn->x[e] = ev_as_type(Xn->dt, x);
			Vn->x[e] = ev_as_type(Vn->dt, v);
		}
		out[i] = Xn;
		if (n->nout > cnt + i)
			out[cnt + i] = Vn;
		if (Hn && n->nout > 2 * cnt + i)
			out[2 * cnt + i] = Hn;
	}
	return 0;
}

/* ---- text: TfIdfVectorizer ------------------------------------------------------------------ */

/* TfIdfVectorizer: per row of X [N?, C] the counts of pool_int64s' n-grams
 * (lengths min_gram_length .. max_gram_length, tokens max_skip_count + 1
 * apart at most; unigrams once, with no skip) at their ngram_indexes; TF
 * the counts, IDF weights where counted, TFIDF counts times weights. */
int ev_tfidf(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *cnt = ir_attr_find(n, "ngram_counts"), *ix = ir_attr_find(n, "ngram_indexes");
	ir_attr *pool = ir_attr_find(n, "pool_int64s"), *wts = ir_attr_find(n, "weights");
	int64_t lo = ir_attr_int(n, "min_gram_length", 1), hi = ir_attr_int(n, "max_gram_length", 1);
	int64_t skips = ir_attr_int(n, "max_skip_count", 0);
	const char *mode = ir_attr_string(n, "mode", "TF");
	if (!cnt || !ix || !pool || X->rank < 1 || X->rank > 2)
		return ev_noref(r, n, "TfIdfVectorizer without an int64 pool, or of X of rank %d", X->rank);
	int64_t width = 0, rows = X->rank == 2 ? X->d[0] : 1, C = X->d[X->rank - 1];
	for (int i = 0; i < ix->n; i++)
		width = ix->ints[i] + 1 > width ? ix->ints[i] + 1 : width;
	int64_t d[2] = {rows, width};
	ev_tensor *Y = ev_new(r, DT_F32, X->rank, X->rank == 2 ? d : d + 1);
	double *freq = arena_array(r->A, (size_t)ix->n + 1, sizeof *freq);  /* per n-gram of the pool */
	for (int64_t row = 0; row < rows; row++) {
		const double *x = X->x + row * C;
		int64_t ord = 0;         /* the ordinal of the pool's first n-gram of length L */
		memset(freq, 0, (size_t)ix->n * sizeof *freq);
		for (int64_t L = 1; L <= cnt->n; L++) {
			int64_t t0 = cnt->ints[L - 1], t1 = L < cnt->n ? cnt->ints[L] : pool->n, grams = (t1 - t0) / L;
			for (int64_t sk = 0; L >= lo && L <= hi && sk <= (L == 1 ? 0 : skips); sk++)
				for (int64_t st = 0; st + (L - 1) * (sk + 1) < C; st++)
					for (int64_t q = 0; q < grams && ord + q < ix->n; q++) {
						int match = 1;
						for (int64_t k = 0; k < L && match; k++)
							match = (int64_t)x[st + k * (sk + 1)] == pool->ints[t0 + q * L + k];
						freq[ord + q] += match;
					}
			ord += grams;
		}
		/* weights are per n-gram of the pool, like ngram_indexes */
		for (int i = 0; i < ix->n; i++) {
			double w = wts && i < wts->n ? wts->floats[i] : 1, f = freq[i];
			Y->x[row * width + ix->ints[i]] = !strcmp(mode, "IDF") ? (f > 0 ? w : 0) : !strcmp(mode, "TFIDF") ? f * w : f;
		}
	}
	out[0] = Y;
	return 0;
}
