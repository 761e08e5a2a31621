/* fuzz_readers.c: libFuzzer targets of the data readers, one per FUZZ_MODE:
 *
 *   tensorfile  weights/tensor files (rt_tf_open, rt_tf_open_mem and the
 *               allocation-free rt_tf_open_view), every tensor looked up
 *   testdata    ONNX test data: a TensorProto/SequenceProto/OptionalProto
 *               .pb and a .npy through compiler/cmd/testdata.c (what `cellc
 *               verify` and `--testbench` read)
 *   traindata   the training program's readers (rt_array_parse: IDX, .npy,
 *               gzip of either; rt_gunzip and rt_inflate on their own)
 *
 * See fuzz.h for what is a finding.
 */
#define _POSIX_C_SOURCE 200809L

#include "cellrt.h"
#include "compile.h"
#include "fuzz.h"
#include "testdata.h"

#ifndef FUZZ_MODE
#error "build with -DFUZZ_MODE=tensorfile|testdata|traindata"
#endif
#define MODE_tensorfile 1
#define MODE_testdata 2
#define MODE_traindata 3
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODE CAT(MODE_, FUZZ_MODE)

#if MODE == MODE_tensorfile
static void walk(const rt_tensorfile *tf)
{
	volatile unsigned char sink = 0;
	for (int i = 0; i < tf->count; i++) {
		const rt_tensor *t = &tf->t[i];
		if (rt_tf_find(tf, t->name) == NULL)
			abort();        /* a listed tensor must be found by its name */
		if (t->nbytes)
			sink ^= ((const unsigned char *)t->data)[t->nbytes - 1];
	}
	(void)sink;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
#if MODE == MODE_tensorfile
	rt_tensorfile tf;
	if (rt_tf_open(&tf, fuzz_file("t.weights", data, n)) == RT_OK) {
		walk(&tf);
		rt_tf_close(&tf);
	}
	void *copy = aligned_alloc(64, (n + 64) & ~(size_t)63);    /* images are 64-byte aligned */
	if (!copy)
		abort();
	memcpy(copy, data, n);
	if (rt_tf_open_mem(&tf, copy, n) == RT_OK) {
		walk(&tf);
		rt_tf_close(&tf);
	}
	rt_tensor table[8];
	if (rt_tf_open_view(&tf, copy, n, table, 8) == RT_OK)
		walk(&tf);
	free(copy);
#elif MODE == MODE_testdata
	fuzz_scratch();
	if (setjmp(fuzz_jb))
		return 0;
	arena A;
	arena_init(&A);
	diag D;
	diag_init(&D, "fuzz");
	D.quiet = 1;
	ir_graph *g = ir_graph_new(&A, NULL, "fuzz");
	/* a .npy file and a data-set directory holding the input as input_0.pb */
	(void)td_read_npy(g, &D, fuzz_file("a.npy", data, n));
	const char *dir = fuzz_path("set");
	mkdir(dir, 0700);
	char pb[512];
	snprintf(pb, sizeof pb, "set/input_0.pb");
	fuzz_file(pb, data, n);
	td_set s = {.dir = dir};
	diag_init(&D, "fuzz");
	D.quiet = 1;
	(void)td_read(g, &D, &s);
	arena_free(&A);
#else
	char err[256];
	rt_array a;
	if (rt_array_parse(&a, data, n, err, sizeof err) == RT_OK) {
		if (a.dtype == 1 || a.dtype == 11)
			(void)rt_array_to_i64(&a, err, sizeof err);
		rt_array_free(&a);
	}
	void *out = NULL;
	size_t outn = 0;
	if (rt_gunzip(data, n, (size_t)1 << 24, &out, &outn, err, sizeof err) == RT_OK)
		free(out);
	if (rt_inflate(data, n, (size_t)1 << 24, &out, &outn, err, sizeof err) == RT_OK)
		free(out);
#endif
	return 0;
}
