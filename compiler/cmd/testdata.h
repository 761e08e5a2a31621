/* testdata.h: golden data sets for `cellc compile --testbench` and
 * `cellc verify --data` (testdata.c): one reader for both.
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

enum { TD_MAX_SETS = 256 };    /* data sets of one command */

typedef struct td_set {
	const char *dir;
	int nin, nout;
	ir_value **in, **out;   /* [nin], [nout] after td_read: constants of the scratch graph */
} td_set;

typedef struct td_list {
	int n, cap;
	td_set *sets;
} td_list;

/* Adds the set(s) of directory `arg` (at most TD_MAX_SETS in all); -1 after
 * a message on stderr naming command `cmd`. */
int td_collect(arena *A, const char *cmd, const char *arg, td_list *L);
/* Reads every file of s into constants of g; -1 after a diagnostic. */
int td_read(ir_graph *g, diag *D, td_set *s);
/* The file of input (output = 0) or output k of s: DIR/input_K.pb if it
 * exists, else DIR/input_K.npy. */
const char *td_path(arena *A, const td_set *s, int output, int k);
/* The tensor in file `path` (td_path) as a constant of g; NULL after a
 * diagnostic. */
ir_value *td_read_file(ir_graph *g, diag *D, const char *path);
/* The name the data give tensor v read from `path`: a TensorProto's name
 * field, or NULL (.npy files, TensorProtos without a name). */
const char *td_tensor_name(const ir_value *v, const char *path);
/* Data tensor x, read from `path`, against the model's input or output
 * `want` (`role` "input" or "output", k its position): td_check_name the
 * TensorProto's name when it has one (data are matched by position, so a
 * name that differs is a mix-up), td_check_type the dtype, the rank and
 * every dimension `want` fixes.  0, or -1 after a diagnostic naming the
 * file, the tensor and the model's value. */
int td_check_name(diag *D, const char *path, const ir_value *x, const ir_value *want, const char *role, int k);
int td_check_type(diag *D, const char *path, const ir_value *x, const ir_value *want, const char *role);

/* A .npy file as a constant of g; NULL after a diagnostic.  float16 ('<f2')
 * is read as float32 (ir_value.narrow DT_F16). */
ir_value *td_read_npy(ir_graph *g, diag *D, const char *path);
/* Golden data of a FLOAT16 / BFLOAT16 model input or output (narrow): cellc
 * computes those in float32, so a tensor of 16-bit encodings (UINT16, as
 * ONNX's own tests store bfloat16 data) becomes a float32 constant of g;
 * anything else is returned as it is. */
ir_value *td_widen(ir_graph *g, ir_value *v, ir_dtype narrow);

#endif
