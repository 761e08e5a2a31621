/* demo_main.c: runs the C that cellc generated for lstm_classifier.onnx.
 *
 * Shows the emitted API as a user calls it: create the model from its weights
 * file, run a whole batch of sequences, then feed the same sequences one time
 * step at a time through the streaming API, and compare both with PyTorch's
 * output (lstm_classifier_data.h, written by make_lstm_classifier.py).
 * Exits 0 when every value matches within atol 1e-5 + rtol 1e-4.
 */
#include <math.h>
#include <stdio.h>

#include "lstm_classifier.h"
#include "lstm_classifier_data.h"

static int close_enough(float got, float ref)
{
	return fabsf(got - ref) <= 1e-5f + 1e-4f * fabsf(ref);
}

int main(int argc, char **argv)
{
	const char *weights = argc > 1 ? argv[1] : "lstm_classifier.weights";
	lstm_classifier *m;
	int st = lstm_classifier_create(&m, weights);
	if (st) {
		fprintf(stderr, "demo: %s: %s\n", weights, lstm_classifier_status_str(st));
		return 1;
	}

	/* Whole sequences: x is [batch, seq, 8], the output [batch, 3]. */
	lstm_classifier_dims d = {.batch = DEMO_B, .seq = DEMO_T};
	float y[DEMO_B * DEMO_C];
	st = lstm_classifier_run(m, &d, demo_x, y);
	if (st) {
		fprintf(stderr, "demo: run: %s\n", lstm_classifier_status_str(st));
		lstm_classifier_destroy(m);
		return 1;
	}

	/* Streaming: one step at a time; after the last step the output is the
	 * classification of the whole sequence. */
	lstm_classifier_dims d1 = {.batch = DEMO_B, .seq = 1};
	float xt[DEMO_B * DEMO_I], ys[DEMO_B * DEMO_C];
	lstm_classifier_reset(m);
	for (int t = 0; t < DEMO_T && !st; t++) {
		for (int b = 0; b < DEMO_B; b++)
			for (int i = 0; i < DEMO_I; i++)
				xt[b * DEMO_I + i] = demo_x[(b * DEMO_T + t) * DEMO_I + i];
		st = lstm_classifier_step(m, &d1, xt, ys);
	}
	lstm_classifier_destroy(m);
	if (st) {
		fprintf(stderr, "demo: step: %s\n", lstm_classifier_status_str(st));
		return 1;
	}

	int bad = 0;
	float worst = 0;
	printf("log-probabilities of %d sequences of %d steps (%d classes)\n\n", DEMO_B, DEMO_T, DEMO_C);
	printf("  seq class        cellc run   cellc stream        PyTorch\n");
	for (int b = 0; b < DEMO_B; b++)
		for (int c = 0; c < DEMO_C; c++) {
			int k = b * DEMO_C + c;
			printf("  %3d %5d  %15.8f %14.8f %14.8f\n", b, c, y[k], ys[k], demo_ref[k]);
			bad += !close_enough(y[k], demo_ref[k]) + !close_enough(ys[k], demo_ref[k]);
			float e = fmaxf(fabsf(y[k] - demo_ref[k]), fabsf(ys[k] - demo_ref[k]));
			worst = fmaxf(worst, e);
		}
	printf("\nmax |cellc - PyTorch| = %.3g: %s (atol 1e-5 + rtol 1e-4)\n", worst,
	       bad ? "MISMATCH" : "matches");
	return bad ? 1 : 0;
}
