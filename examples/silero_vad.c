/* silero_vad.c: voice-activity detection with Silero VAD compiled to C by cellc.
 *
 * Reads a 16 kHz mono WAV file (16-bit PCM or 32-bit float), feeds it to the
 * model 512 samples at a time through the streaming API with the LSTM state
 * carried by the instance (cellc compile --carry), and prints the speech
 * probability of every chunk and the speech segments found in them.  Works
 * with Silero v4 (input [1, 512], state h, c) and with v5, v6 and the other
 * exports of their architecture (input [1, 576]: the last 64 samples of the
 * previous chunk, then the 512 new ones; state `state`): the context is what
 * the compiled input holds beyond 512 samples.
 *
 * Build (examples/silero_vad.sh does all of it):
 *   cellc compile silero_vad_v5.onnx -o out --name silero --bind sr=16000 \
 *       --dim input_1=576 --carry state=stateN
 *   make -C out && cc -O2 -Iout -Iruntime examples/silero_vad.c out/libsilero.a \
 *       build/libcellrt.a -lopenblas -lm -fopenmp -o silero_vad
 * Run:
 *   silero_vad [-q] [-t THRESHOLD] WEIGHTS FILE.wav
 *
 * Segments follow the rule of Silero's get_speech_timestamps: speech starts
 * at a chunk whose probability reaches THRESHOLD (0.5) and ends where it has
 * stayed below THRESHOLD - 0.15 for 100 ms; segments shorter than 250 ms are
 * dropped, the others padded by 30 ms.  -q prints only the segments.
 * Exit status: 0 ok, 1 on an error (message on stderr).
 */
#include "silero.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RATE = 16000, CHUNK = 512 };

static uint32_t le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* The samples of a mono WAV file at RATE Hz as floats in [-1, 1]; NULL after a message. */
static float *read_wav(const char *path, long *count)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return NULL;
	}
	unsigned char h[12], ch[8];
	float *x = NULL;
	int fmt = 0, bits = 0, got_fmt = 0;
	if (fread(h, 1, 12, f) != 12 || memcmp(h, "RIFF", 4) || memcmp(h + 8, "WAVE", 4)) {
		fprintf(stderr, "%s: not a WAV file\n", path);
		goto fail;
	}
	while (fread(ch, 1, 8, f) == 8) {
		uint32_t n = le32(ch + 4);
		if (!memcmp(ch, "fmt ", 4)) {
			unsigned char b[40];
			if (n < 16 || n > sizeof b || fread(b, 1, n, f) != n) {
				fprintf(stderr, "%s: bad fmt chunk\n", path);
				goto fail;
			}
			fmt = le16(b);
			if (fmt == 0xFFFE && n >= 26)
				fmt = le16(b + 24);     /* WAVE_FORMAT_EXTENSIBLE: the subformat */
			int chans = le16(b + 2);
			uint32_t rate = le32(b + 4);
			bits = le16(b + 14);
			if (chans != 1 || rate != RATE || !((fmt == 1 && bits == 16) || (fmt == 3 && bits == 32))) {
				fprintf(stderr, "%s: %d channel(s), %u Hz, format %d, %d bits; want mono %d Hz 16-bit PCM "
					"or float (convert with: sox IN.wav -r %d -c 1 -b 16 OUT.wav)\n", path, chans,
					(unsigned)rate, fmt, bits, RATE, RATE);
				goto fail;
			}
			got_fmt = 1;
			if (n & 1)
				fseek(f, 1, SEEK_CUR);
		} else if (!memcmp(ch, "data", 4)) {
			if (!got_fmt) {
				fprintf(stderr, "%s: data before fmt\n", path);
				goto fail;
			}
			long nb = bits / 8, ns = (long)(n / (uint32_t)nb);
			unsigned char *raw = malloc((size_t)n + 1);
			x = malloc(sizeof *x * (size_t)(ns + 1));
			if (!raw || !x) {
				free(raw);
				fprintf(stderr, "%s: out of memory\n", path);
				goto fail;
			}
			ns = (long)(fread(raw, 1, n, f) / (size_t)nb);     /* a truncated file: what is there */
			for (long i = 0; i < ns; i++) {
				const unsigned char *p = raw + i * nb;
				if (fmt == 1) {
					x[i] = (float)(int16_t)le16(p) / 32768.0f;
				} else {
					uint32_t u = le32(p);
					memcpy(&x[i], &u, 4);
				}
			}
			free(raw);
			fclose(f);
			*count = ns;
			return x;
		} else {
			fseek(f, (long)(n + (n & 1)), SEEK_CUR);
		}
	}
	fprintf(stderr, "%s: no data chunk\n", path);
fail:
	free(x);
	fclose(f);
	return NULL;
}

int main(int argc, char **argv)
{
	int quiet = 0, a = 1;
	double th = 0.5;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "-q"))
			quiet = 1;
		else if (!strcmp(argv[a], "-t") && a + 1 < argc)
			th = atof(argv[++a]);
		else
			break;
	}
	if (argc - a != 2 || !(th > 0 && th < 1)) {
		fprintf(stderr, "usage: silero_vad [-q] [-t THRESHOLD] WEIGHTS FILE.wav\n");
		return 1;
	}
	long n;
	float *x = read_wav(argv[a + 1], &n);
	if (!x)
		return 1;
	silero *m;
	int st = silero_create(&m, argv[a]);
	if (st) {
		fprintf(stderr, "silero_vad: %s: %s\n", argv[a], silero_status_str(st));
		return 1;
	}
	silero_dims d = {0};
	int64_t *dp = (int64_t *)&d;            /* every symbol (the batch) is 1 */
	for (size_t i = 0; i < sizeof d / sizeof *dp; i++)
		dp[i] = 1;
	int64_t shape[8];
	silero_io_shape(&d, 0, 0, shape);
	long width = (long)shape[1], ctx = width - CHUNK;
	if (silero_io_rank(0, 0) != 2 || ctx < 0 || ctx > CHUNK) {
		fprintf(stderr, "silero_vad: the model's input is [%lld, %ld]; compile it for %d-sample chunks\n",
			(long long)shape[0], width, CHUNK);
		return 1;
	}
	float *in = calloc((size_t)width, sizeof *in), prob;
	const long min_silence = RATE / 10, min_speech = RATE / 4, pad = RATE * 30 / 1000;
	long start = 0, temp_end = 0, nseg = 0, (*seg)[2] = malloc(sizeof *seg * (size_t)(n / CHUNK + 1));
	int triggered = 0;
	for (long i = 0; i + CHUNK <= n; i += CHUNK) {
		memmove(in, in + CHUNK, sizeof *in * (size_t)ctx);     /* the previous chunk's last samples */
		memcpy(in + ctx, x + i, sizeof *in * CHUNK);
		if ((st = silero_stream(m, &d, in, &prob))) {
			fprintf(stderr, "silero_vad: %s\n", silero_status_str(st));
			return 1;
		}
		if (!quiet)
			printf("%8.3f s  %.4f %s\n", (double)i / RATE, prob, prob >= th ? "speech" : "");
		if (prob >= th && temp_end)
			temp_end = 0;
		if (prob >= th && !triggered) {
			triggered = 1;
			start = i;
		} else if (prob < th - 0.15 && triggered) {
			if (!temp_end)
				temp_end = i;
			if (i - temp_end >= min_silence) {
				if (temp_end - start > min_speech) {
					seg[nseg][0] = start;
					seg[nseg++][1] = temp_end;
				}
				triggered = 0;
				temp_end = 0;
			}
		}
	}
	if (triggered && n - start > min_speech) {
		seg[nseg][0] = start;
		seg[nseg++][1] = n;
	}
	for (long s = 0; s < nseg; s++) {
		long b = seg[s][0] - pad < 0 ? 0 : seg[s][0] - pad, e = seg[s][1] + pad > n ? n : seg[s][1] + pad;
		printf("speech %.3f %.3f\n", (double)b / RATE, (double)e / RATE);
	}
	silero_destroy(m);
	free(seg);
	free(in);
	free(x);
	return 0;
}
