/* rt_conv_tmpl.h: rt_conv's im2col convolution (rt_nn.c explains it),
 * written once for the element type CT, included by rt_nn.c once per
 * precision with:
 *   CT     the element type (float, double)
 *   CONV   the function's name (rt_conv, rt_conv_f64)
 *   GEMM   the matrix product of that type (rt_sgemm, rt_dgemm)
 *   CTILE  elements of the column buffer (the same bytes for each type)
 * conv_geo, conv_tap and RT_CONV_TILE come from rt_nn.c. */

void CONV(CT *y, const CT *x, const CT *w, const CT *b, int nsp, const int64_t *xdims,
	  int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
	  const int64_t *dil)
{
	CT col[CTILE];
	conv_geo G;
	conv_geo_init(&G, nsp, xdims, kdims, strides, pads, dil);
	int64_t n = xdims[0], c = xdims[1], cg = c / group, mg = m / group;
	int64_t rows = cg * G.nk;               /* one column: every tap of every channel */
	int64_t tile = rows > 0 && rows < CTILE ? CTILE / rows : 1;
	/* the input offset of every (position, tap), computed once when it fits
	 * (a streaming model calls this for a few positions many times) */
	int32_t taps[RT_CONV_TILE / 2];
	int tabled = G.nout * G.nk <= RT_CONV_TILE / 2 && G.nin <= INT32_MAX;
	if (tabled)
		for (int64_t p = 0; p < G.nout; p++)
			for (int64_t kk = 0; kk < G.nk; kk++)
				taps[p * G.nk + kk] = (int32_t)conv_tap(&G, p, kk);
#define TAP(p, kk) (tabled ? (int64_t)taps[(p) * G.nk + (kk)] : conv_tap(&G, (p), (kk)))
	for (int64_t b0 = 0; b0 < n; b0++) {
		CT *yb = y + b0 * m * G.nout;
		for (int64_t o = 0; o < m; o++)
			for (int64_t p = 0; p < G.nout; p++)
				yb[o * G.nout + p] = b ? b[o] : 0;
		if (!G.nout || !rows)
			continue;
		if (cg == 1 && mg == 1 && tabled) {
			/* depthwise: one filter per channel, no product worth a GEMM */
			for (int64_t o = 0; o < m; o++) {
				const CT *xo = x + (b0 * c + o) * G.nin, *wo = w + o * G.nk;
				for (int64_t p = 0; p < G.nout; p++) {
					CT acc = 0;
					for (int64_t kk = 0; kk < G.nk; kk++) {
						int64_t t = taps[p * G.nk + kk];
						if (t >= 0)
							acc += wo[kk] * xo[t];
					}
					yb[o * G.nout + p] += acc;
				}
			}
			continue;
		}
		for (int64_t g = 0; g < group; g++) {
			const CT *xg = x + (b0 * c + g * cg) * G.nin;
			const CT *wg = w + g * mg * rows;
			if (rows > CTILE) {
				/* a column longer than the buffer: the reference loop */
				for (int64_t o = 0; o < mg; o++)
					for (int64_t p = 0; p < G.nout; p++) {
						double acc = 0;
						for (int64_t r = 0; r < rows; r++) {
							int64_t t = TAP(p, r % G.nk);
							if (t >= 0)
								acc += (double)wg[o * rows + r] * xg[(r / G.nk) * G.nin + t];
						}
						yb[(g * mg + o) * G.nout + p] += (CT)acc;
					}
				continue;
			}
			for (int64_t p0 = 0; p0 < G.nout; p0 += tile) {
				int64_t np = G.nout - p0 < tile ? G.nout - p0 : tile;
				for (int64_t kk = 0; kk < G.nk; kk++)
					for (int64_t j = 0; j < np; j++) {
						int64_t t = TAP(p0 + j, kk);
						for (int64_t ch = 0; ch < cg; ch++)
							col[(ch * G.nk + kk) * np + j] = t >= 0 ? xg[ch * G.nin + t] : 0;
					}
				CT *yt = yb + g * mg * G.nout + p0;
				if (np < 16 && mg >= 16 && np * mg <= CTILE / 2) {
					/* few positions (a streaming model's chunk): the product
					 * the other way round, [np, rows] x [rows, mg], whose wide
					 * side fills the vectors, then added into Y's rows */
					CT tr[CTILE / 2];
					GEMM(1, 1, np, mg, rows, 1, col, np, wg, rows, 0, tr, mg);
					for (int64_t o = 0; o < mg; o++)
						for (int64_t j = 0; j < np; j++)
							yt[o * G.nout + j] += tr[j * mg + o];
					continue;
				}
				GEMM(0, 0, mg, np, rows, 1, wg, rows, col, np, 1, yt, G.nout);
			}
		}
	}
#undef TAP
}

#undef CT
#undef CONV
#undef GEMM
#undef CTILE
