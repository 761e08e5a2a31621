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

#include <math.h>       /* the inline activations */
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
	void *mem;              /* whole file, 64-byte aligned allocation owned by tf;
	                           NULL after rt_tf_open_mem (the caller owns the image) */
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
/* Without allocation (code emitted with --no-malloc): rt_tf_open_view checks
 * an image like rt_tf_open_mem but describes it in the caller's table[cap]
 * (RT_ERR_MISMATCH when the image holds more tensors); the result owns
 * nothing and needs no rt_tf_close.  rt_tf_read_into reads a whole file into
 * buf[cap] through unbuffered stdio, setting *size; RT_ERR_MISMATCH when the
 * file is larger than cap. */
int rt_tf_open_view(rt_tensorfile *tf, const void *mem, size_t size, rt_tensor *table, int cap);
int rt_tf_read_into(const char *path, void *buf, size_t cap, size_t *size);
/* Writes count tensors to path atomically (temporary file, then rename). */
int rt_tf_write(const char *path, int count, const rt_tensor *t);
size_t rt_dtype_size(int dtype);    /* 0 for unsupported codes */

/* ---- BLAS wrappers ---------------------------------------------------------
 * C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * M == 1 goes to GEMV.  The *_ref versions are the naive reference kernels
 * the unit tests compare against; rt_sgemm_portable is the blocked plain-C
 * kernel that builds without BLAS (`make BLAS=none`) use for rt_sgemm. */

void rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
	      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
	      float *C, int64_t ldc);
void rt_sgemm_ref(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		  float *C, int64_t ldc);
void rt_sgemm_portable(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		       float *C, int64_t ldc);

/* ---- kernels: activations (owner: runtime/rt_act.c) ---------------------- */
/* One scalar function per element-wise activation of the IR (ops.def), static
 * inline so that the fused loops of emitted code inline them; alpha/beta as
 * in the ONNX RNN specification.  All are within a few ulp of the exact
 * function: libm's float functions, except tanh (below). */

static inline float rt_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
/* tanh as the rational minimax approximation p(x)/q(x) of degree 13/6 on
 * [-7.9053, 7.9053] that Eigen and onnxruntime use (tanh rounds to +-1 in
 * float outside): relative error below 3.6e-7 (about 3 ulp) over every float,
 * and about 3 times faster than libm's tanhf, which goes through expm1f --
 * tanh is a large part of an LSTM step. */
static inline float rt_tanhf(float x)
{
	const float c = 7.90531110763549805f;
	if (x != x || (x < 0.0004f && x > -0.0004f))
		return x;       /* NaN, and tanh(x) == x in float near 0 */
	float xc = x > c ? c : x < -c ? -c : x;
	float x2 = xc * xc;
	float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
	p = x2 * p + -8.60467152213735e-11f;
	p = x2 * p + 5.12229709037114e-08f;
	p = x2 * p + 1.48572235717979e-05f;
	p = x2 * p + 6.37261928875436e-04f;
	p = x2 * p + 4.89352455891786e-03f;
	float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
	q = x2 * q + 2.26843463243900e-03f;
	q = x2 * q + 4.89352518554385e-03f;
	return xc * p / q;
}
static inline float rt_reluf(float x) { return x > 0.0f ? x : 0.0f; }
static inline float rt_affinef(float x, float alpha, float beta) { return alpha * x + beta; }
static inline float rt_leakyreluf(float x, float alpha) { return x < 0.0f ? alpha * x : x; }
static inline float rt_thresholdedreluf(float x, float alpha) { return x > alpha ? x : 0.0f; }
static inline float rt_scaledtanhf(float x, float alpha, float beta) { return alpha * rt_tanhf(beta * x); }
static inline float rt_hardsigmoidf(float x, float alpha, float beta)
{
	float y = alpha * x + beta;
	return y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
}
static inline float rt_eluf(float x, float alpha) { return x < 0.0f ? alpha * expm1f(x) : x; }
static inline float rt_softsignf(float x) { return x / (1.0f + fabsf(x)); }
/* log(1 + e^x) without overflow for large x */
static inline float rt_softplusf(float x) { return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
/* min(max(x, lo), hi); NaN stays NaN */
static inline float rt_clipf(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }
/* sign: -1, 0 or 1 (0 for 0 and NaN) */
static inline float rt_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }
/* modrelu(z; b) = sign(z) relu(|z| + b) (CELLS.md) */
static inline float rt_modreluf(float z, float b)
{
	float r = fabsf(z) + b;
	return r > 0.0f ? (z > 0.0f ? r : z < 0.0f ? -r : 0.0f) : 0.0f;
}
/* a mod b with the sign of b (ONNX Mod with fmod = 0; Python's %) */
static inline float rt_fmod_floorf(float a, float b)
{
	float r = fmodf(a, b);
	return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
}
static inline double rt_fmod_floor(double a, double b)
{
	double r = fmod(a, b);
	return r != 0.0 && ((r < 0.0) != (b < 0.0)) ? r + b : r;
}
static inline int64_t rt_imod_floor(int64_t a, int64_t b)
{
	if (b == 0)
		return 0;
	if (b == -1)
		return 0;       /* INT64_MIN % -1 would trap */
	int64_t r = a % b;
	return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

/* ---- kernels: generic tensor ops (owner: runtime/rt_ops.c) --------------- */
/* Data movement works on any element type: esize is the element size in
 * bytes, and tensors are dense row-major arrays.  xdims/ydims are the dims of
 * X/Y ([rank] each, rank <= RT_TF_MAXRANK).  These kernels are simple enough to
 * be their own reference; the unit tests check them against index formulas. */

/* Y = X with axes permuted: Y.dims[k] = X.dims[perm[k]],
 * Y[i_0, .., i_{r-1}] = X[j] with j[perm[k]] = i_k.  rank 0 copies one element. */
void rt_transpose(void *y, const void *x, size_t esize, int rank, const int64_t *xdims,
		  const int *perm);

/* ONNX Slice's start clamping for one axis of size dim: negative starts count
 * from the end; the result lies in [0, dim] for step > 0 and in [-1, dim-1]
 * for step < 0 (-1 only when the slice is empty). */
int64_t rt_slice_start(int64_t start, int64_t dim, int64_t step);
/* Y[i_0, ..] = X[start_0 + i_0 * step_0, ..] for i_k < ydims[k]; starts already
 * clamped (rt_slice_start), steps nonzero, any sign. */
void rt_slice(void *y, const void *x, size_t esize, int rank, const int64_t *xdims,
	      const int64_t *ydims, const int64_t *start, const int64_t *step);

/* Y[r, c] = X[r, c] for r < rows, c < cols with row strides ldy, ldx (in
 * elements): one part of a Concat (Y = whole, X = part) or of a Split. */
void rt_copy_rows(void *y, int64_t ldy, const void *x, int64_t ldx, int64_t rows, int64_t cols,
		  size_t esize);

/* ONNX Gather viewed as 3-D: X [outer, n, inner], indices [nidx] (int32 when
 * idx_dtype == 6, int64 when 7; negative ones count from n), Y [outer, nidx,
 * inner]: Y[o, j, i] = X[o, idx[j], i].  RT_ERR_INDEX (Y untouched) if an index
 * is outside [-n, n). */
int rt_gather(void *y, const void *x, size_t esize, int64_t outer, int64_t n, int64_t inner,
	      const void *idx, int idx_dtype, int64_t nidx);

/* Softmax / LogSoftmax along the middle axis of X viewed as [outer, n, inner]
 * (ONNX opset-13 semantics for one axis), numerically stable: the maximum is
 * subtracted before exp.  Y may be X. */
void rt_softmax(float *y, const float *x, int64_t outer, int64_t n, int64_t inner);
void rt_log_softmax(float *y, const float *x, int64_t outer, int64_t n, int64_t inner);

/* ---- initialisers (owner: runtime/rt_init.c) ----------------------------- */
/* Seeded parameter initialisers (CELLS.md section 4), used by the compiler to
 * fill weights a .cell model does not load from a file.  Deterministic for a
 * seed on every platform: xoshiro256** seeded through splitmix64, normals by
 * Box-Muller in double.  Matrices are row-major [rows, cols] = [out, in]
 * (nn.Linear layout): a "unit" is a row, its incoming weights the columns.
 * Functions that allocate scratch memory return RT_OK or RT_ERR_NOMEM. */

typedef struct rt_rng { uint64_t s[4]; } rt_rng;
void rt_rng_seed(rt_rng *r, uint64_t seed);
uint64_t rt_rng_next(rt_rng *r);
double rt_rng_uniform(rt_rng *r);       /* [0, 1), 53 random bits */
double rt_rng_normal(rt_rng *r);        /* N(0, 1) */

void rt_init_const(float *w, int64_t n, float value);
/* U(-bound, bound): PyTorch's default for nn.RNN/LSTM/GRU is bound = 1/sqrt(H),
 * for nn.Linear 1/sqrt(fan_in) */
void rt_init_uniform(float *w, int64_t n, float bound, rt_rng *r);
void rt_init_normal(float *w, int64_t n, float std, rt_rng *r);
/* eye(rows, cols): 1 on the main diagonal (torch.nn.init.eye_) */
void rt_init_eye(float *w, int64_t rows, int64_t cols);
/* torch.nn.init.orthogonal_: rows (or columns, when fewer) orthonormal:
 * QR of a Gaussian matrix (of the transpose when rows < cols), Q's columns
 * multiplied by the signs of R's diagonal, times gain */
int rt_init_orthogonal(float *w, int64_t rows, int64_t cols, float gain, rt_rng *r);
/* Kaiming normal, fan_in mode, ReLU gain: N(0, 2 / cols) */
void rt_init_kaiming_normal(float *w, int64_t rows, int64_t cols, rt_rng *r);
/* Martens' sparse initialisation: each row gets min(nnz, cols) non-zero
 * entries N(0, 1) at distinct random columns, the rest 0 */
int rt_init_sparse(float *w, int64_t rows, int64_t cols, int nnz, rt_rng *r);
/* echo-state: rt_init_sparse(n, n, nnz), then scaled so that its spectral
 * radius (largest |eigenvalue|, rt_spectral_radius) is `radius`; a matrix
 * whose eigenvalues are all 0 stays as drawn */
int rt_init_echo(float *w, int64_t n, int nnz, float radius, rt_rng *r);
/* Largest |eigenvalue| of the square matrix w [n, n], by Gelfand's formula
 * (||A^k||^(1/k), k = 2^40, by repeated squaring in double; relative error
 * far below 1e-6 for the matrices we make); -1 when out of memory */
double rt_spectral_radius(const float *w, int64_t n);

/* ---- training (cellc compile --train) ---- */
/* Y = expm(X), X and Y [n, n] row-major (scaling and squaring, [13/13] Pade, in
 * double); RT_ERR_NOMEM, or RT_ERR_NONFINITE when the Pade denominator is
 * singular (X holds NaN or Inf) */
int rt_expm(float *y, const float *x, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
