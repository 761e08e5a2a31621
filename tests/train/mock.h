/* mock.h: a hand-written model with exactly the C API of a `cellc compile
 * --train` build (docs/training.md, "Gradients"), for testing the training
 * program (templates/train_main.c) before and independently of the
 * autodiff.  See mock.c for the model and its gradient.
 *
 * Built with -DMOCK_LOSS=0 (ce, targets int64 [batch]), 1 (ce-all: logits
 * [seq, batch, C] at every step, targets int64 [seq, batch]), 2 (mse, targets
 * float [batch, C]) or 3 (masked-mse: targets and a mask input, float
 * [batch, C]); MOCK_I (input size, default 28) and MOCK_C (classes, default
 * 10) set the sizes; MOCK_BATCH_FIRST=1 makes x [batch, seq, I].
 */
#ifndef MOCK_H
#define MOCK_H

#include <stddef.h>
#include <stdint.h>

#include "cellrt.h"

#ifndef MOCK_I
#define MOCK_I 28
#endif
#ifndef MOCK_C
#define MOCK_C 10
#endif
#ifndef MOCK_LOSS
#define MOCK_LOSS 0
#endif
#ifndef MOCK_BATCH_FIRST        /* 1: x and grad.x are [batch, seq, I] */
#define MOCK_BATCH_FIRST 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mock mock;

typedef struct mock_dims {
	int64_t seq;
	int64_t batch;
} mock_dims;

#define mock_NUM_INPUTS (MOCK_LOSS == 3 ? 3 : 2)
#define mock_NUM_OUTPUTS 7
#define mock_NUM_PARAMS 3
#define mock_TRAIN 1

int mock_create(mock **m, const char *weights_path);
void mock_destroy(mock *m);
int mock_reset(mock *m);
const char *mock_status_str(int status);

const char *mock_io_name(int is_output, int k);
int mock_io_dtype(int is_output, int k);
int mock_io_rank(int is_output, int k);
int mock_bind_dims(const int64_t *const *input_dims, mock_dims *d);
int mock_io_shape(const mock_dims *d, int is_output, int k, int64_t *dims);
int mock_run_generic(mock *m, const mock_dims *d, const void *const *in, void *const *out);

int mock_param(mock *m, int k, const char **name, float **data, int64_t *numel);
int mock_set_forward_only(mock *m, int on);
int mock_save(mock *m, const char *path, int nextra, const rt_tensor *extra);

typedef struct mock_train_info {
	int x_input;
	int batch_axis;
	int time_axis;
	int loss_kind;          /* 0 ce, 1 ce-all, 2 mse, 3 masked-mse */
	int logits_output;
	int loss_output_index;
	int nclasses;
} mock_train_info;
extern const mock_train_info mock_TRAIN_INFO;

#ifdef __cplusplus
}
#endif

#endif
