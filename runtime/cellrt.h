/* cellrt.h: the public header of libcellrt, the runtime that code emitted by
 * cellc links against.  It compiles as C11 and as C++.
 *
 * Sections: status codes; tensor files (the weights-file contract, also used
 * for verify's inputs and outputs); BLAS wrappers with naive reference
 * kernels; activations; generic tensor kernels.  Nothing here has global
 * mutable state, and nothing calls exit(): every fallible function returns an
 * rt_status.
 *
 * Dimension legend: M, N, K matrix sizes (C[M,N] = A[M,K] B[K,N]); lda/ldb/ldc
 * row strides in elements (row-major throughout).
 */
#ifndef CELLRT_H
#define CELLRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes -------------------------------------------------------- */

typedef enum rt_status {
	RT_OK = 0,
	RT_ERR_NOMEM,           /* allocation failed */
	RT_ERR_IO,              /* file could not be opened, read or written */
	RT_ERR_FORMAT,          /* not a cellc tensor file, or unknown version */
	RT_ERR_TRUNCATED,       /* file shorter than its header/table says */
	RT_ERR_CHECKSUM,        /* contents do not match the stored checksum */
	RT_ERR_MISMATCH,        /* tensors of another model: name, dtype or shape differ */
	RT_ERR_SHAPE,           /* dimensions passed at run time are invalid */
	RT_ERR_ARG,             /* NULL or out-of-range argument */
	RT_ERR_INDEX,           /* an index tensor holds an out-of-range index */
	RT_ERR_NONFINITE,       /* NaN or Inf where finite numbers are required */
	RT_STATUS_COUNT
} rt_status;

/* A readable sentence for every status code (never NULL). */
const char *rt_status_str(int status);

/* ---- tensor files ---------------------------------------------------------
 * Layout (little-endian):
 *   header, 64 bytes: magic "CELLTNSR", u32 version (1), u32 count,
 *     u64 table offset (64), u64 data offset, u64 file size,
 *     u64 FNV-1a-64 checksum of bytes [64, file size), 16 bytes zero
 *   table: count entries of 256 bytes: name (160 bytes, NUL-terminated),
 *     u32 dtype (ONNX TensorProto codes), u32 rank, i64 dims[8],
 *     u64 offset (from file start, 64-byte aligned), u64 nbytes
 *   data: each tensor row-major at its offset.
 * rt_tf_open reads the whole file, checks magic, version, sizes, checksum and
 * that every tensor lies inside the file before anything uses it. */

enum { RT_TF_NAME = 160, RT_TF_MAXRANK = 8 };

typedef struct rt_tensor {
	const char *name;       /* NUL-terminated, < RT_TF_NAME bytes */
	int dtype;              /* ONNX TensorProto.DataType code */
	int rank;               /* 0..RT_TF_MAXRANK */
	int64_t dims[RT_TF_MAXRANK]; /* [rank] */
	const void *data;       /* row-major, 64-byte aligned when read from a file */
	size_t nbytes;          /* size of data */
} rt_tensor;

typedef struct rt_tensorfile {
	void *mem;              /* whole file, 64-byte aligned allocation */
	size_t size;            /* bytes in mem */
	int count;              /* number of tensors */
	rt_tensor *t;           /* [count] views into mem */
} rt_tensorfile;

int rt_tf_open(rt_tensorfile *tf, const char *path);
/* Same checks on a file image already in memory (embedded weights, tests);
 * the image must stay alive and 64-byte aligned while tf is used. */
int rt_tf_open_mem(rt_tensorfile *tf, const void *mem, size_t size);
void rt_tf_close(rt_tensorfile *tf);
const rt_tensor *rt_tf_find(const rt_tensorfile *tf, const char *name);
/* Finds `name` and checks dtype and shape; RT_ERR_MISMATCH otherwise. */
int rt_tf_expect(const rt_tensorfile *tf, const char *name, int dtype, int rank,
		 const int64_t *dims, const void **data);
/* Writes count tensors to path atomically (temporary file, then rename). */
int rt_tf_write(const char *path, int count, const rt_tensor *t);
size_t rt_dtype_size(int dtype);    /* 0 for unsupported codes */

/* ---- BLAS wrappers ---------------------------------------------------------
 * C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * M == 1 goes to GEMV.  The *_ref versions are the naive reference kernels
 * the unit tests compare against (and that BLAS=none builds use). */

void rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
	      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
	      float *C, int64_t ldc);
void rt_sgemm_ref(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		  float *C, int64_t ldc);

/* ---- kernels: activations (owner: runtime/rt_act.c) ---------------------- */

/* ---- kernels: generic tensor ops (owner: runtime/rt_ops.c) --------------- */

#ifdef __cplusplus
}
#endif

#endif
