/* testdata.h: golden data sets for `cellc compile --testbench` (testdata.c).
 *
 * A data set is a directory holding the inputs and outputs of one run,
 * numbered by graph position:
 *   input_<k>.pb / output_<k>.pb     serialized ONNX TensorProtos (the ONNX
 *                                    backend-test layout), or
 *   input_<k>.npy / output_<k>.npy   NumPy .npy files (format 1.0-3.0,
 *                                    little-endian, C order; dtypes f2 f4 f8 i1
 *                                    i2 i4 i8 u1 u2 u4 u8 b1).
 * A directory holding test_data_set_* subdirectories stands for all of them
 * (in name order).
 */
#ifndef CELLC_TESTDATA_H
#define CELLC_TESTDATA_H

#include "diag.h"
#include "ir.h"

typedef struct td_set {
	const char *dir;
	int nin, nout;
	ir_value **in, **out;   /* [nin], [nout] after td_read: constants of the scratch graph */
} td_set;

typedef struct td_list {
	int n, cap;
	td_set *sets;
} td_list;

/* Adds the set(s) of directory `arg`; -1 after a message on stderr. */
int td_collect(arena *A, const char *cmd, const char *arg, td_list *L);
/* Reads every file of s into constants of g; -1 after a diagnostic. */
int td_read(ir_graph *g, diag *D, td_set *s);
/* A .npy file as a constant of g; NULL after a diagnostic.  float16 ('<f2')
 * is read as float32 (ir_value.narrow DT_F16). */
ir_value *td_read_npy(ir_graph *g, diag *D, const char *path);
/* Golden data of a FLOAT16 / BFLOAT16 model input or output (narrow): cellc
 * computes those in float32, so a tensor of 16-bit encodings (UINT16, as
 * ONNX's own tests store bfloat16 data) becomes a float32 constant of g;
 * anything else is returned as it is. */
ir_value *td_widen(ir_graph *g, ir_value *v, ir_dtype narrow);

#endif
