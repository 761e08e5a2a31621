/* rt_svg.c: line plots as standalone SVG files (cellrt.h, "plots"), for the
 * training program's loss curves and its per-step gradient norms
 * ||dL/dh_t|| (on a log axis: the vanishing-gradient picture).
 *
 * One plot: a frame with ticks and grid lines ("nice" steps of 1, 2, 5 x 10^k
 * on a linear axis, powers of ten on a log one), one polyline per series in
 * a fixed palette, a legend, a title and axis labels (XML-escaped).  Points
 * that cannot be drawn (NaN, infinities, values <= 0 on a log axis) break the
 * line.  The file is written to a temporary beside the target and renamed,
 * like every file the training program leaves behind.
 */
#define _POSIX_C_SOURCE 200809L

#include "cellrt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { W = 720, H = 420, LEFT = 80, RIGHT = 170, TOP = 40, BOTTOM = 60 };

static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 && c != '\t')
			fputc(' ', f);          /* control characters are not XML */
		else
			fputc(c, f);
	}
}

static int usable(double v, int log_axis) { return isfinite(v) && (!log_axis || v > 0); }

/* The axis range [lo, hi] in plot units (log10 for a log axis) and the tick
 * step; a degenerate range is widened. */
static void axis_range(double lo, double hi, int log_axis, double *plo, double *phi, double *step)
{
	if (log_axis) {
		lo = floor(log10(lo));
		hi = ceil(log10(hi));
		if (hi <= lo)
			hi = lo + 1;
		*plo = lo;
		*phi = hi;
		*step = ceil((hi - lo) / 8);
		return;
	}
	if (hi <= lo) {
		double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
		lo -= d;
		hi += d;
	}
	double raw = (hi - lo) / 6, mag = pow(10, floor(log10(raw))), f = raw / mag;
	*step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
	*plo = floor(lo / *step) * *step;
	*phi = ceil(hi / *step) * *step;
}

static void tick_label(char *buf, size_t n, double v, int log_axis)
{
	if (log_axis)
		snprintf(buf, n, "1e%d", (int)lround(v));
	else if (v != 0 && (fabs(v) >= 1e5 || fabs(v) < 1e-3))
		snprintf(buf, n, "%.1e", v);
	else
		snprintf(buf, n, "%.6g", fabs(v) < 1e-12 ? 0.0 : v);
}

static int plot(FILE *f, const rt_plot *p, int ns, const rt_series *s)
{
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	for (int k = 0; k < ns; k++)
		for (int64_t i = 0; i < s[k].n; i++)
			if (isfinite(s[k].x[i]) && usable(s[k].y[i], p->log_y)) {
				xlo = fmin(xlo, s[k].x[i]);
				xhi = fmax(xhi, s[k].x[i]);
				ylo = fmin(ylo, s[k].y[i]);
				yhi = fmax(yhi, s[k].y[i]);
			}
	if (xlo > xhi) {                /* nothing to draw: an empty frame */
		xlo = 0, xhi = 1;
		ylo = p->log_y ? 0.1 : 0, yhi = 1;
	}
	double x0, x1, xs, y0, y1, ys;
	axis_range(xlo, xhi, 0, &x0, &x1, &xs);
	axis_range(ylo, yhi, p->log_y, &y0, &y1, &ys);
	const double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(v) (LEFT + ((v) - x0) / (x1 - x0) * pw)
#define PY(v) (TOP + ph - ((p->log_y ? log10(v) : (v)) - y0) / (y1 - y0) * ph)
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		   "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H, W, H, W, H);
	fputs("<text x=\"360\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", f);
	xml_text(f, p->title);
	fputs("</text>\n", f);
	char lab[64];
	fputs("<g stroke=\"#dddddd\" stroke-width=\"1\">\n", f);
	for (double v = x0; v <= x1 + xs * 1e-9; v += xs)
		fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.0f\"/>\n", PX(v), TOP, PX(v), TOP + ph);
	for (double v = y0; v <= y1 + ys * 1e-9; v += ys) {
		double y = TOP + ph - (v - y0) / (y1 - y0) * ph;
		fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\"/>\n", LEFT, y, LEFT + pw, y);
	}
	if (p->log_y && ys == 1) {  /* 2..9 x 10^k: light lines; labels 2 and 5 over few decades */
		fputs("</g>\n<g stroke=\"#f0f0f0\" stroke-width=\"1\">\n", f);
		for (double v = y0; v < y1; v += 1)
			for (int k = 2; k <= 9; k++) {
				double y = TOP + ph - (v + log10(k) - y0) / (y1 - y0) * ph;
				fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\"/>\n", LEFT + 1, y, LEFT + pw - 1, y);
			}
		if (y1 - y0 <= 2) {
			fputs("</g>\n<g text-anchor=\"end\" fill=\"#555555\" font-size=\"10\">\n", f);
			for (double v = y0; v < y1; v += 1)
				for (int k = 2; k <= 5; k += 3)
					fprintf(f, "<text x=\"%d\" y=\"%.2f\">%de%d</text>\n", LEFT - 6,
						TOP + ph - (v + log10(k) - y0) / (y1 - y0) * ph + 4, k, (int)lround(v));
		}
	}
	fputs("</g>\n<g text-anchor=\"middle\">\n", f);
	for (double v = x0; v <= x1 + xs * 1e-9; v += xs) {
		tick_label(lab, sizeof lab, v, 0);
		fprintf(f, "<text x=\"%.2f\" y=\"%.0f\">%s</text>\n", PX(v), TOP + ph + 18, lab);
	}
	fputs("</g>\n<g text-anchor=\"end\">\n", f);
	for (double v = y0; v <= y1 + ys * 1e-9; v += ys) {
		tick_label(lab, sizeof lab, v, p->log_y);
		fprintf(f, "<text x=\"%d\" y=\"%.2f\">%s</text>\n", LEFT - 6,
			TOP + ph - (v - y0) / (y1 - y0) * ph + 4, lab);
	}
	fputs("</g>\n", f);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
		LEFT, TOP, pw, ph);
	fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">", LEFT + pw / 2, H - 16);
	xml_text(f, p->xlabel);
	fprintf(f, "</text>\n<text x=\"18\" y=\"%.0f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.0f)\">",
		TOP + ph / 2, TOP + ph / 2);
	xml_text(f, p->ylabel);
	fputs("</text>\n", f);
	for (int k = 0; k < ns; k++) {
		const char *col = palette[k % (int)(sizeof palette / sizeof palette[0])];
		int open = 0;
		for (int64_t i = 0; i < s[k].n; i++) {
			if (!isfinite(s[k].x[i]) || !usable(s[k].y[i], p->log_y)) {
				if (open)
					fputs("\"/>\n", f);
				open = 0;
				continue;
			}
			if (!open)
				fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", col);
			fprintf(f, "%s%.2f,%.2f", open ? " " : "", PX(s[k].x[i]), PY(s[k].y[i]));
			open = 1;
		}
		if (open)
			fputs("\"/>\n", f);
		if (s[k].n == 1 && usable(s[k].y[0], p->log_y) && isfinite(s[k].x[0]))
			fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n", PX(s[k].x[0]),
				PY(s[k].y[0]), col);
		double ly = TOP + 10 + 18 * k;
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
			LEFT + pw + 12, ly, LEFT + pw + 32, ly, col);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">", LEFT + pw + 38, ly + 4);
		xml_text(f, s[k].name);
		fputs("</text>\n", f);
	}
#undef PX
#undef PY
	fputs("</svg>\n", f);
	return ferror(f) ? RT_ERR_IO : RT_OK;
}

int rt_svg_plot(const char *path, const rt_plot *p, int nseries, const rt_series *s)
{
	if (!path || !*path || !p || nseries < 0 || (nseries && !s))
		return RT_ERR_ARG;
	for (int k = 0; k < nseries; k++)
		if (s[k].n < 0 || (s[k].n && (!s[k].x || !s[k].y)))
			return RT_ERR_ARG;
	size_t n = strlen(path);
	char *tmp = malloc(n + sizeof ".tmp.XXXXXX");
	if (!tmp)
		return RT_ERR_NOMEM;
	memcpy(tmp, path, n);
	memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 && fchmod(fd, 0644) == 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return RT_ERR_IO;
	}
	int st = plot(f, p, nseries, s);
	if (fclose(f) != 0)
		st = RT_ERR_IO;
	if (st == RT_OK && rename(tmp, path) != 0)
		st = RT_ERR_IO;
	if (st != RT_OK)
		unlink(tmp);
	free(tmp);
	return st;
}
