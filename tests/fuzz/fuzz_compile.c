/* fuzz_compile.c: libFuzzer targets that run `cellc compile` in process on
 * the input, each built from this file with one FUZZ_MODE:
 *
 *   onnx        the input is an ONNX model: load, every pass, emit C
 *   onnx_train  the same with --train (loss, gradients, training program)
 *   cell        the input is a native .cell model (models, cells, graphs)
 *   bind        the input is the file of --bind s=FILE.pb for a fixed model
 *               with a sequence input (tests/out/loop/bad_bind/model.onnx,
 *               or $CELLC_FUZZ_BIND_MODEL)
 *
 * Exit statuses 0 and 2 are both fine; see fuzz.h for what is a finding.
 */
#define _POSIX_C_SOURCE 200809L

#include "cmd.h"
#include "fuzz.h"

#ifndef FUZZ_MODE
#error "build with -DFUZZ_MODE=onnx|onnx_train|cell|bind"
#endif
#define MODE_onnx 1
#define MODE_onnx_train 2
#define MODE_cell 3
#define MODE_bind 4
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODE CAT(MODE_, FUZZ_MODE)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *argv[12];
	int argc = 0;
	const char *model;
#if MODE == MODE_cell
	model = fuzz_file("m.cell", data, n);
#elif MODE == MODE_bind
	const char *env = getenv("CELLC_FUZZ_BIND_MODEL");
	model = env ? env : "tests/out/loop/bad_bind/model.onnx";
	char bind[512];
	snprintf(bind, sizeof bind, "s=%s", fuzz_file("s.pb", data, n));
#else
	model = fuzz_file("m.onnx", data, n);
#endif
	argv[argc++] = "compile";
	argv[argc++] = (char *)model;
	argv[argc++] = "-o";
	argv[argc++] = (char *)fuzz_path("out");
#if MODE == MODE_onnx_train
	argv[argc++] = "--train";
#endif
#if MODE == MODE_bind
	argv[argc++] = "--bind";
	argv[argc++] = bind;
#endif
	argv[argc] = NULL;
	if (!setjmp(fuzz_jb))
		(void)cmd_compile(argc, argv);
	return 0;
}
