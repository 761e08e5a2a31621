/* stream.c: runs a compiled Silero VAD model (cellc compile --name M --carry
 * IN=OUT...) chunk by chunk over an audio file through M_stream, the state
 * carried by the instance, as tests/silero/ort_stream.js runs ONNX Runtime.
 *
 *   cc -DM=NAME '-DHDR="NAME.h"' -IDIR stream.c DIR/libNAME.a ... -o stream
 *   stream WEIGHTS AUDIO.f32 CHUNK OUT.f32
 *
 * Input 0 is [1, C + CHUNK]: each call's holds the last C samples of the
 * previous call's input (zeros at the start) and the next CHUNK samples; the
 * model has one other output, [1, 1], the probability.  OUT.f32 gets per call
 * the probability and every carried state as M_carried returns it (float32).
 * With BENCH=REPS in the environment, times REPS passes over the audio instead
 * (each from M_reset) and prints `c_us_per_chunk=MEDIAN`.  With FORCE=REF.f32
 * (a file of the same layout, ONNX Runtime's), each call runs M_run_generic
 * instead, its state inputs taken from REF's previous chunk (zeros for the
 * first): the error of one call, not carried.  Exit status 0 ok, 1 on any
 * error (message on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include HDR

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(x) CAT(M, x)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* FORCE mode: M_run_generic with the state inputs from the reference. */
static int forced(M *m, const F(_dims) *d, const char *ref, const float *x, long nchunks, long N, long C, FILE *o)
{
	int nin = 0, nout = 0;
	while (F(_io_name)(0, nin))
		nin++;
	while (F(_io_name)(1, nout))
		nout++;
	/* the carried pairs, in M_carried's order, by their sizes in the record */
	void *in[16], *out[16];
	int64_t cnt[16], sh[8], rec = 1;
	for (int k = 0; k < nin; k++) {
		F(_io_shape)(d, 0, k, sh);
		cnt[k] = 1;
		for (int a = 0; a < F(_io_rank)(0, k); a++)
			cnt[k] *= sh[a];
		in[k] = calloc((size_t)cnt[k], 4);
		if (k)
			rec += cnt[k];
	}
	int64_t ocnt[16];
	for (int k = 0; k < nout; k++) {
		F(_io_shape)(d, 1, k, sh);
		ocnt[k] = 1;
		for (int a = 0; a < F(_io_rank)(1, k); a++)
			ocnt[k] *= sh[a];
		out[k] = calloc((size_t)ocnt[k], 4);
	}
	FILE *r = fopen(ref, "rb");
	float *prev = calloc((size_t)rec, 4), *inp = in[0];
	if (!r || nin - 1 != F(_NUM_CARRIED) || nout - 1 != F(_NUM_CARRIED)) {
		fprintf(stderr, "stream: FORCE wants a readable file and a model whose inputs after the first are all carried\n");
		return 1;
	}
	for (long k = 0; k < nchunks; k++) {
		memmove(inp, inp + N, (size_t)C * 4);
		memcpy(inp + C, x + k * N, (size_t)N * 4);
		int64_t off = 1;
		for (int j = 1; j < nin; j++) {
			memcpy(in[j], prev + off, (size_t)cnt[j] * 4);
			off += cnt[j];
		}
		int rc = F(_run_generic)(m, d, (const void *const *)in, out);
		if (rc) {
			fprintf(stderr, "stream: run_generic: %s\n", F(_status_str)(rc));
			return 1;
		}
		fwrite(out[0], 4, 1, o);
		for (int j = 1; j < nout; j++)
			fwrite(out[j], 4, (size_t)ocnt[j], o);
		if (fread(prev, 4, (size_t)rec, r) != (size_t)rec) {
			fprintf(stderr, "stream: %s is short\n", ref);
			return 1;
		}
	}
	fclose(r);
	if (fclose(o))
		return 1;
	printf("chunks=%ld\n", nchunks);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: stream WEIGHTS|- AUDIO.f32 CHUNK OUT.f32 [CONTEXT]\n");
		return 1;
	}
	long N = atol(argv[3]);
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f) / 4;
	fseek(f, 0, SEEK_SET);
	float *x = malloc((size_t)len * 4 + 4);
	if (fread(x, 4, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "stream: cannot read %s\n", argv[2]);
		return 1;
	}
	fclose(f);
	/* every symbol (the batch) 1; input 0 is [1, C + N]: C samples of context */
	F(_dims) d;
	int64_t *dp = (int64_t *)&d;
	for (size_t i = 0; i < sizeof d / sizeof *dp; i++)
		dp[i] = 1;
	int64_t sh[8];
	/* with CONTEXT, the symbol that sizes input 0's axis 1 (a model compiled
	 * for any chunk length) is CHUNK + CONTEXT */
	long want = argc == 6 ? N + atol(argv[5]) : 0;
	for (size_t i = 0; want && i < sizeof d / sizeof *dp; i++) {
		dp[i] = want;
		F(_io_shape)(&d, 0, 0, sh);
		if (sh[1] != want || sh[0] != 1)
			dp[i] = 1;
	}
	F(_io_shape)(&d, 0, 0, sh);
	long C = (long)sh[1] - N;
	if (F(_io_rank)(0, 0) != 2 || sh[0] != 1 || C < 0) {
		fprintf(stderr, "stream: input 0 is not [1, C + %ld]\n", N);
		return 1;
	}
	M *m;
	int rc;
#if CAT(M, _NO_MALLOC)
	static _Alignas(64) unsigned char arena[CAT(M, _ARENA_BYTES)];
	rc = F(_create_in)(&m, arena, sizeof arena, CAT(M, _EMBEDDED_WEIGHTS) ? NULL : argv[1]);
#else
	rc = F(_create)(&m, CAT(M, _EMBEDDED_WEIGHTS) ? NULL : argv[1]);
#endif
	if (rc) {
		fprintf(stderr, "stream: create: %s\n", F(_status_str)(rc));
		return 1;
	}
	long nchunks = len / N;
	const char *bench = getenv("BENCH");
	int reps = bench ? atoi(bench) + 1 : 1;
	double *t = calloc((size_t)reps, sizeof *t);
	FILE *o = bench ? NULL : fopen(argv[4], "wb");
	if (!bench && !o) {
		perror(argv[4]);
		return 1;
	}
	float *inp = calloc((size_t)(C + N), 4), prob;
	const char *force = getenv("FORCE");
	if (force)
		return forced(m, &d, force, x, nchunks, N, C, o);
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		if ((rc = F(_reset)(m))) {
			fprintf(stderr, "stream: reset: %s\n", F(_status_str)(rc));
			return 1;
		}
		memset(inp, 0, (size_t)(C + N) * 4);
		for (long k = 0; k < nchunks; k++) {
			memmove(inp, inp + N, (size_t)C * 4);
			memcpy(inp + C, x + k * N, (size_t)N * 4);
			if ((rc = F(_stream)(m, &d, inp, &prob))) {
				fprintf(stderr, "stream: chunk %ld: %s\n", k, F(_status_str)(rc));
				return 1;
			}
			if (o) {
				fwrite(&prob, 4, 1, o);
				for (int p = 0; p < F(_NUM_CARRIED); p++) {
					int64_t cnt;
					const float *s = F(_carried)(m, p, &cnt);
					if (!s) {
						fprintf(stderr, "stream: no carried state %d after a call\n", p);
						return 1;
					}
					fwrite(s, 4, (size_t)cnt, o);
				}
			}
		}
		t[r] = (now_us() - t0) / (double)nchunks;
	}
	if (o) {
		if (fclose(o)) {
			perror(argv[4]);
			return 1;
		}
		printf("chunks=%ld\n", nchunks);
	} else {
		qsort(t + 1, (size_t)(reps - 1), sizeof *t, cmpd);
		printf("c_us_per_chunk=%.2f chunks=%ld\n", t[1 + (reps - 1) / 2], nchunks);
	}
	if (F(_carried)(m, F(_NUM_CARRIED), NULL)) {
		fprintf(stderr, "stream: carried state %d should not exist\n", F(_NUM_CARRIED));
		return 1;
	}
	F(_reset)(m);
	if (F(_carried)(m, 0, NULL)) {
		fprintf(stderr, "stream: carried state after reset should be NULL\n");
		return 1;
	}
	F(_destroy)(m);
	free(inp);
	free(x);
	free(t);
	return 0;
}
