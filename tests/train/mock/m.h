/* m.h of a stand-in train build for testing fd_check.c itself (fd_mock.c):
 * the API of docs/training.md for a model of two inputs (x [B, I] f32,
 * target [B, O] f32), outputs y [B, O], loss, grad.W, grad.b, grad.x.
 * Legend: B batch (2), I inputs (3), O outputs (4). */
#ifndef M_H
#define M_H
#include <stdint.h>

#include "cellrt.h"

typedef struct m m;
typedef struct m_dims { int64_t B; } m_dims;
#define m_NUM_INPUTS 2
#define m_NUM_OUTPUTS 5
#define m_NUM_PARAMS 2
#define m_TRAIN 1
int m_create(m **m, const char *weights_path);
void m_destroy(m *m);
const char *m_status_str(int status);
const char *m_io_name(int is_output, int k);
int m_io_dtype(int is_output, int k);
int m_io_rank(int is_output, int k);
int m_bind_dims(const int64_t *const *input_dims, m_dims *d);
int m_io_shape(const m_dims *d, int is_output, int k, int64_t *dims);
int m_run_generic(m *m, const m_dims *d, const void *const *in, void *const *out);
int m_param(m *m, int k, const char **name, float **data, int64_t *numel);
int m_set_forward_only(m *m, int on);
#endif
