/* fuzz_export.c: libFuzzer target of `cellc export MODEL.onnx WEIGHTS -o
 * OUT.onnx`.  The input is split: its first two bytes give the length L of
 * a weights file (tensor file, runtime/rt_tensorfile.c) that follows, the
 * rest is the ONNX model.  See fuzz.h for what is a finding. */
#define _POSIX_C_SOURCE 200809L

#include "cmd.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n < 2)
		return 0;
	size_t L = (size_t)data[0] << 8 | data[1];
	if (L > n - 2)
		L = n - 2;
	const char *w = fuzz_file("w.weights", data + 2, L);
	const char *m = fuzz_file("m.onnx", data + 2 + L, n - 2 - L);
	char *argv[] = {"export", (char *)m, (char *)w, "-o", (char *)fuzz_path("out.onnx"), NULL};
	if (!setjmp(fuzz_jb))
		(void)cmd_export(5, argv);
	return 0;
}
