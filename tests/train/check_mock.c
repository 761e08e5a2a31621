/* check_mock.c: the hand-written gradient of the mock model (mock.c)
 * against central finite differences of its loss, for every parameter
 * element and every input element, and dstate against grad.x (both are
 * dL/dh_t in this model).  Built with small MOCK_I and MOCK_C, for each
 * MOCK_LOSS; prints PASS/FAIL lines.
 *
 *   check_mock TMPDIR
 */
#include "mock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T = 4, B = 3 };
#define TAG (MOCK_BATCH_FIRST ? "_batch_first" : "")

static double loss_of(mock *m, const mock_dims *d, const void *const *in, void *const *out)
{
	mock_set_forward_only(m, 1);
	int st = mock_run_generic(m, d, in, out);
	mock_set_forward_only(m, 0);
	return st == RT_OK ? *(float *)out[1] : NAN;
}

static int close_enough(double fd, double g) { return fabs(fd - g) <= 2e-4 + 2e-3 * fabs(g); }

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	char path[4096];
	snprintf(path, sizeof path, "%s/check_mock.weights", argv[1]);
	float a[MOCK_I], w[MOCK_C * MOCK_I], b[MOCK_C];
	unsigned s = 12345;
#define RND() ((float)((s = s * 1103515245u + 12345u) >> 8 & 0xffff) / 65536.0f - 0.5f)
	for (int i = 0; i < MOCK_I; i++)
		a[i] = 0.5f + RND();
	for (int i = 0; i < MOCK_C * MOCK_I; i++)
		w[i] = RND();
	for (int i = 0; i < MOCK_C; i++)
		b[i] = RND();
	rt_tensor t[3] = {
		{"rec.a", 1, 1, {MOCK_I}, a, sizeof a},
		{"head.weight", 1, 2, {MOCK_C, MOCK_I}, w, sizeof w},
		{"head.bias", 1, 1, {MOCK_C}, b, sizeof b},
	};
	mock *m;
	if (rt_tf_write(path, 3, t) != RT_OK || mock_create(&m, path) != RT_OK) {
		printf("FAIL train_prog/mock_fd/create\n");
		return 1;
	}
	float x[T * B * MOCK_I], logits[T * B * MOCK_C], loss, ga[MOCK_I], gw[MOCK_C * MOCK_I], gb[MOCK_C];
	float gx[T * B * MOCK_I], ds[T * B * MOCK_I];
	int64_t yi[T * B];
	float yf[B * MOCK_C], mask[B * MOCK_C];
	for (int i = 0; i < T * B * MOCK_I; i++)
		x[i] = RND();
	for (int i = 0; i < T * B; i++)
		yi[i] = (i * 7 + 1) % MOCK_C;
	for (int i = 0; i < B * MOCK_C; i++) {
		yf[i] = RND();
		mask[i] = i % 3 != 1;
	}
	mock_dims d = {T, B};
	const void *in[3] = {x, MOCK_LOSS <= 1 ? (const void *)yi : (const void *)yf, mask};
	void *out[7] = {logits, &loss, ga, gw, gb, gx, ds};
	if (mock_run_generic(m, &d, in, out) != RT_OK) {
		printf("FAIL train_prog/mock_fd/run\n");
		return 1;
	}
	float *g[4] = {ga, gw, gb, gx};
	float gc[4][MOCK_C * MOCK_I > T * B * MOCK_I ? MOCK_C * MOCK_I : T * B * MOCK_I];
	for (int k = 0; k < 4; k++)
		memcpy(gc[k], g[k], sizeof(float) * (size_t)(k == 0 ? MOCK_I : k == 1 ? MOCK_C * MOCK_I : k == 2 ? MOCK_C : T * B * MOCK_I));
	static const char *const names[4] = {"rec.a", "head.weight", "head.bias", "x"};
	int bad_all = 0;
	for (int k = 0; k < 4; k++) {
		float *p;
		int64_t n;
		if (k < 3)
			mock_param(m, k, NULL, &p, &n);
		else
			p = x, n = T * B * MOCK_I;
		int bad = 0;
		double worst = 0;
		for (int64_t i = 0; i < n; i++) {
			const float h = 1e-2f;
			float keep = p[i];
			p[i] = keep + h;
			double lp = loss_of(m, &d, in, out);
			p[i] = keep - h;
			double lm = loss_of(m, &d, in, out);
			p[i] = keep;
			double fd = (lp - lm) / (2.0 * (double)h);
			worst = fmax(worst, fabs(fd - gc[k][i]));
			bad += !close_enough(fd, gc[k][i]);
		}
		printf("%s train_prog/mock_fd/loss%d%s/%s max_abs_err=%.3g\n", bad ? "FAIL" : "PASS", MOCK_LOSS,
		       TAG, names[k], worst);
		bad_all |= bad;
	}
	int same = 1;     /* dstate [T, B, I]; grad.x [T, B, I] or [B, T, I] */
	for (int t = 0; t < T; t++)
		for (int b = 0; b < B; b++)
			for (int i = 0; i < MOCK_I; i++)
				same &= ds[(t * B + b) * MOCK_I + i] ==
					gx[MOCK_BATCH_FIRST ? (b * T + t) * MOCK_I + i : (t * B + b) * MOCK_I + i];
	printf("%s train_prog/mock_fd/loss%d%s/dstate\n", same ? "PASS" : "FAIL", MOCK_LOSS, TAG);
	mock_destroy(m);
	remove(path);
	return bad_all || !same;
}
