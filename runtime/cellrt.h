/* cellrt.h: the public header of libcellrt, the runtime that code emitted by
 * cellc links against.  It compiles as C11 and as C++.
 *
 * Sections: status codes; tensor files (the weights-file contract, also used
 * for verify's inputs and outputs); BLAS wrappers with naive reference
 * kernels; threads and the recurrent states of emitted recurrences;
 * activations; generic tensor kernels.  Nothing here has global
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
#include <string.h>     /* memcpy: the bits of a float in rt_expf_act */

#ifdef __cplusplus
extern "C" {
#endif

/* RT_BARE_METAL: 1 for a target without an operating system (a
 * microcontroller: no threads, no files, no environment, no heap for the
 * model), where libcellrt asks nothing of an OS and emitted code must be
 * built with --embed-weights --no-malloc (NAME.c says so with #error
 * otherwise).  Set for Arm's M profile (Cortex-M) unless the program is
 * built for Linux there, or by -DCELLRT_BARE_METAL for another such target. */
#if defined(CELLRT_BARE_METAL) || \
	(defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && !defined(__linux__))
#define RT_BARE_METAL 1
#else
#define RT_BARE_METAL 0
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
	RT_ERR_ODE_STEPS,       /* an ODE solver reached its step limit before the end */
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
/* The same on a copy of the image that tf owns, as rt_tf_open's (the
 * bytes of a weights file fetched by a web page): the caller's image may
 * go, and have any alignment, once this returns. */
int rt_tf_open_copy(rt_tensorfile *tf, const void *image, size_t size);
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
 * M == 1 and N == 1 go to GEMV (BLAS sgemm would pack the whole matrix
 * first).  The *_ref versions are the naive reference kernels
 * the unit tests compare against; rt_sgemm_portable is the blocked plain-C
 * kernel that builds without BLAS (`make BLAS=none`) use for rt_sgemm. */

void rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
	      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
	      float *C, int64_t ldc);
/* C[M,N] = alpha * op(A) op(B) + beta * bias broadcast to every row
 * (bias [N]; C is not read): a Gemm whose C input is a bias vector, without
 * first copying the bias into every row of C. */
void rt_sgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		   const float *bias, float *C, int64_t ldc);
void rt_sgemm_ref(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		  float *C, int64_t ldc);
void rt_sgemm_portable(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		       float *C, int64_t ldc);

/* The same in double precision (f64 Gemm and MatMul): OpenBLAS's dgemm and
 * dgemv, or the portable kernel without BLAS; rt_dgemm_ref the reference. */
void rt_dgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
	      const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
	      double *C, int64_t ldc);
void rt_dgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
		   const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
		   const double *bias, double *C, int64_t ldc);
void rt_dgemm_ref(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
		  const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
		  double *C, int64_t ldc);
void rt_dgemm_portable(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
		       const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
		       double *C, int64_t ldc);

/* ---- step products on weights packed once per run ---------------------------
 * A recurrence multiplies its rows by the same weights at every step; a
 * GEMM packs op(B) into panels at every call.  rt_gemm_pack packs op(B)
 * ([K, N]; B stored [N, K] when transB) once, before the steps, into *P
 * (allocated or grown on demand, 64-byte aligned; *cap its bytes; free()
 * it), when libcellrt's own kernel will take products of M rows on this
 * CPU: returns 1 when packed, 0 when not (the steps then pass P = NULL),
 * -1 when out of memory.  rt_sgemm_packed is then rt_sgemm (rt_sgemm_bias
 * when bias is set) with those weights, on P when it is set and the kernel
 * takes this call's rows, else on B itself. */
int rt_gemm_pack(int64_t M, int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float **P,
		 size_t *cap);
void rt_sgemm_packed(int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
		     const float *P, int transB, const float *B, int64_t ldb, float beta, const float *bias,
		     float *C, int64_t ldc);

/* ---- batch-1 products on packed weights -----------------------------------
 * A batch-1 recurrence multiplies one row by the same weights at every step,
 * a product bound by the speed at which the weights stream from cache.
 * rt_gemv_pack copies the weights once into P (N * K floats): the [N,K]
 * matrix whose row n holds the weights of output n (B itself when transB,
 * else B^T), in blocks of 256 rows each stored [K][w] (w = 256, or what is
 * left for the last block), which rt_gemv_packed then reads in order:
 *   c[i] = alpha sum_k a[k] W[r0 + i, k] + beta (bias ? bias[i] : c[i])
 * for i < r1 - r0; a range of rows, so that the threads of a batch-1
 * recurrence can share the outputs.  beta == 0 without bias: c is not read.
 * Results differ from rt_sgemm's only by the order of the float additions. */
void rt_gemv_pack(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float *P);
void rt_gemv_packed(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
		    const float *P, float beta, const float *bias, float *c);
/* the plain-C loop rt_gemv_packed falls back to without SIMD kernels */
void rt_gemv_packed_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			     const float *P, float beta, const float *bias, float *c);
/* The same on weights rounded to bfloat16 (--weights bf16): half the bytes
 * to stream per step, products and sums in float32.  rt_gemv_pack_bf16
 * rounds each weight to the nearest bfloat16 (ties to even) into P, which
 * holds rt_gemv_pack_bf16_size(N, K) elements (blocks of 256 rows as for
 * rt_gemv_pack, each row padded to a multiple of 16 and its groups of 16
 * interleaved so that a shift and a mask widen them: rt_kern.h), with
 * rt_f32_to_bf16_nearest: the function the compiler rounds a model's
 * weights with, so both agree. */
size_t rt_gemv_pack_bf16_size(int64_t N, int64_t K);
void rt_gemv_pack_bf16(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, uint16_t *P);
void rt_gemv_packed_bf16(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			 const uint16_t *P, float beta, const float *bias, float *c);
void rt_gemv_packed_bf16_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				  const uint16_t *P, float beta, const float *bias, float *c);
/* rt_gemv_packed_bf16 in two halves, for several calls on the same a (a
 * step's product whose columns the threads share, one call per gate block),
 * as rt_gemv_quant_i8 and rt_gemv_packed_i8q below: rt_gemv_split_bf16
 * prepares a once for the kernel of P (K <= RT_BF16_SPLIT_KMAX) in xs,
 * which holds K rounded up to even words (with AVX512-BF16, a's high and
 * low bfloat16 parts; else xs is not used), and rt_gemv_packed_bf16x makes
 * rows r0..r1 from a and xs.  The pair gives rt_gemv_packed_bf16's bits. */
enum { RT_BF16_SPLIT_KMAX = 4096 };
void rt_gemv_split_bf16(int64_t K, const float *a, const uint16_t *P, uint32_t *xs);
void rt_gemv_packed_bf16x(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			  const uint32_t *xs, const uint16_t *P, float beta, const float *bias, float *c);
/* The same on int8 weights (--weights int8): a quarter of the bytes, and
 * integer products as PyTorch's dynamic quantization computes them.  Each
 * output row n of W = op(B)^T is quantized on its own (rt_scale_i8, rt_quant_i8:
 * scale s[n] = max_k |W[n, k]| / 127, q = rint(W / s) in [-127, 127]); each
 * call quantizes the activations a (rt_quant_act_u7: 7-bit unsigned, scale
 * sa and zero point zp from the range of a and 0) and sums in int32,
 * exactly:
 *   c[i] = alpha sa s[r] (sum_k qa[k] q[r, k] - zp sum_k q[r, k]) + beta ...
 * for r = r0 + i.  (7 bits: two products of a 7-bit activation and an
 * 8-bit weight add up without overflowing 16 bits, which is what the x86
 * kernel's vpmaddubsw needs.)  P holds rt_gemv_pack_i8_size(N, K) bytes,
 * 64-byte aligned: the scales and row sums, then blocks of 256 rows as for
 * rt_gemv_pack, each row padded to a multiple of 8 and stored in groups of
 * 4 columns (rt_kern.h).  K above RT_I8_KMAX: the products are made in
 * float32 on the dequantized weights s[r] q[r, k] instead (weights-only). */
enum { RT_I8_KMAX = 16384 };
size_t rt_gemv_pack_i8_size(int64_t N, int64_t K);
void rt_gemv_pack_i8(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, int8_t *P);
void rt_gemv_packed_i8(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
		       const int8_t *P, float beta, const float *bias, float *c);
void rt_gemv_packed_i8_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				const int8_t *P, float beta, const float *bias, float *c);
/* rt_gemv_packed_i8 in its two halves, for several calls on the same a (a
 * step's product whose columns the threads share, one call per gate block):
 * rt_gemv_quant_i8 quantizes a once (K <= RT_I8_KMAX) into qa, which holds
 * K rounded up to a multiple of 4 bytes (the tail zeroed), and returns its
 * scale, *zp its zero point; rt_gemv_packed_i8q makes rows r0..r1 from
 * them.  The pair gives rt_gemv_packed_i8's bits. */
float rt_gemv_quant_i8(int64_t K, const float *a, uint8_t *qa, int32_t *zp);
void rt_gemv_packed_i8q(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint8_t *qa, float sa,
			int32_t zp, const int8_t *P, float beta, const float *bias, float *c);
/* rt_gemv_packed_i8 on each of M rows: C[i, 0..r1-r0) from A[i, 0..K) (rows
 * lda and ldc apart), each row's activations quantized on their own, so a
 * row's results are those it gets alone, whatever M and the other rows are
 * (a batch, a whole sequence's input projection and a stream of single
 * steps give it the same bits).  The products of --weights int8
 * --embed-weights --no-malloc builds, whose weights are the program's
 * constants in rt_gemv_pack_i8's layout and nothing else: every product on
 * them, batch-1 step or not, goes through here. */
void rt_gemm_packed_i8(int64_t M, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *A,
		       int64_t lda, const int8_t *P, float beta, const float *bias, float *C, int64_t ldc);

/* ---- threads of row-parallel recurrences ----------------------------------
 * Emitted code built with OpenMP (the emitted Makefile's -fopenmp) splits
 * the batch rows of a recurrence whose rows never meet over rt_num_threads()
 * threads: the CELLRT_NUM_THREADS environment variable when set (1..256),
 * else OpenBLAS's thread count (OPENBLAS_NUM_THREADS), else 1.  Each thread
 * of such a team calls rt_par_thread(1) first and rt_par_thread(0) last:
 * rt_sgemm then runs libcellrt's own single-threaded kernels in that thread
 * (never OpenBLAS's thread pool from inside the team). */
int rt_num_threads(void);
void rt_par_thread(int on);
/* floor(a / b) for b > 0: the division of the size expressions the
 * compiler writes (a strided convolution's output length of a run-time
 * input length), computed once per call from the dims. */
static inline int64_t rt_floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
/* min and max of two sizes (a size expression min(T, 10): ir_symdef) */
static inline int64_t rt_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t rt_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
/* A total padding (below 0: none) split as auto_pad SAME_UPPER puts the odd
 * one at the end (upper 1) and SAME_LOWER (and NOTSET, for ConvTranspose's
 * output_shape) at the beginning; end 0 gives the beginning's, 1 the end's. */
static inline int64_t rt_split_pad(int64_t total, int upper, int end)
{
	total = total < 0 ? 0 : total;
	int64_t begin = upper ? total / 2 : total - total / 2;
	return end ? total - begin : begin;
}
/* ONNX auto_pad SAME over a spatial size d known only at run time (stride
 * s, window span): the padding (ceil(d / s) - 1) s + span - d, split by
 * rt_split_pad. */
static inline int64_t rt_same_pad(int64_t d, int64_t s, int64_t span, int upper, int end)
{
	return rt_split_pad(((d + s - 1) / s - 1) * s + span - d, upper, end);
}
/* ONNX ConvTranspose with output_shape `out` over a spatial size d known
 * only at run time (stride s, window span, output_padding adj): the padding
 * s (d - 1) + adj + span - out, split by rt_split_pad (as ONNX Runtime's
 * conv_transpose_attributes.h does; the generated code has checked that
 * s d + span > out, which ONNX Runtime requires). */
static inline int64_t rt_convt_pad(int64_t d, int64_t s, int64_t span, int64_t adj, int64_t out, int upper, int end)
{
	return rt_split_pad(s * (d - 1) + adj + span - out, upper, end);
}
/* ONNX Resize's (and Upsample's) output size of an axis of size d by a
 * scale, as ONNX Runtime computes it (upsamplebase.h, ComputeOutputShape):
 * the float32 product of the scale and d (itself rounded to float32),
 * truncated; -1 when that is no size (2^31 or more).  The cast to float
 * rounds the product to float32 where float arithmetic is wider. */
static inline int64_t rt_resize_size(int64_t d, float scale)
{
	float p = (float)(scale * (float)d);
	return p >= 0.0f && p < 2147483648.0f ? (int64_t)p : -1;
}

/* The number of the thread that runs this code in its OpenMP team, and the
 * team's size: 0 and 1 outside a team, and in code built without OpenMP.
 * Inline: they follow how the emitted code was compiled, not libcellrt. */
#ifdef _OPENMP
#include <omp.h>
static inline int rt_thread_id(void) { return omp_get_thread_num(); }
static inline int rt_thread_count(void) { return omp_get_num_threads(); }
#else
static inline int rt_thread_id(void) { return 0; }
static inline int rt_thread_count(void) { return 1; }
#endif
/* At batch 1: whether the threads share one row's columns (nonzero) or one
 * thread runs the recurrence, given step_weights, the elements of the
 * weights that the step's products read.  The threads meet once per step,
 * which costs about as much as streaming some tens of KiB of weights, so
 * small steps stay on one thread: the split needs at least
 * CELLRT_SPLIT_MIN elements when that environment variable is set (a
 * decimal number >= 0; 0 splits every step), else RT_SPLIT_MIN (an LSTM of
 * hidden size 111 or more, a GRU of 128). */
enum { RT_SPLIT_MIN = 49152 };
int rt_split_columns(int64_t step_weights);
/* The per-step meeting of the threads that share one batch row's columns
 * (zero-initialised, then every thread tid of the team of n calls
 * rt_barrier_wait each time): writes made before it by any thread are seen
 * after it by all.  Teams of up to RT_BARRIER_FLAGS threads meet on a flag
 * per thread, each on its own cache line (a thread writes its own and reads
 * the others': no shared counter to pass between cores, about one
 * cross-core transfer on the critical path), larger ones on a shared
 * counter.  A wait spins, which costs a fraction of a microsecond when each
 * thread has a core, then yields the CPU after some thousands of tries, so
 * that more threads than cores still progress. */
enum { RT_BARRIER_FLAGS = 8 };
typedef struct rt_barrier {
	struct rt_barrier_flag {
		unsigned v;     /* rounds this thread has arrived at */
	} __attribute__((aligned(64))) flag[RT_BARRIER_FLAGS];
	int count, gen;         /* larger teams: arrivals this round; rounds completed */
} rt_barrier;
void rt_barrier_wait(rt_barrier *b, int tid, int n);
/* The team that runs a recurrence's steps on B batch rows, T steps:
 * rt_num_threads() threads, at most one per row, unless `cols` is set (a
 * schedule whose threads may share one row's columns, threads "rows_cols")
 * and *cols says they do: at B == 1, T > 1, more than one thread and
 * rt_split_columns(step_weights); then all of them take part.  Returns
 * the team's size. */
int rt_team(int64_t B, int64_t T, int64_t step_weights, int *cols);

/* ---- recurrent states of emitted models (owner: runtime/rt_state.c) -------
 * A recurrence keeps its states in the instance between runs, so that a
 * stream (NAME_step) goes on where the last call stopped.  Its function
 * rec_<name>() describes them in a table, an rt_state per state, and calls
 * rt_states_prepare before the steps:
 * - a state whose storage does not hold `count` elements (the first run, or
 *   a run at another batch size) is refused with RT_ERR_SHAPE when
 *   `started` (a stream cannot change its batch size); else it is
 *   allocated anew (64-byte aligned, and on cache lines of its own: threads
 *   that share one row's columns write halves of it at every step), or,
 *   with `in_arena` (--no-malloc), it already is a part of the caller's
 *   arena sized for the largest dims and only its count is set;
 * - then, unless `started`, every state is set to its initial value: a copy
 *   of `init`, or zeros where init is NULL.
 * Returns RT_OK, RT_ERR_SHAPE, or RT_ERR_NOMEM (the state whose allocation
 * failed then holds NULL and count_now 0, and no state is initialised). */
typedef struct rt_state {
	float **data;           /* the instance member holding the state (m->st_<name>) */
	size_t *count_now;      /* elements it holds now (m->st_<name>_n) */
	size_t count;           /* elements of this run */
	const float *init;      /* initial value, count elements; NULL: zeros */
} rt_state;
int rt_states_prepare(const rt_state *s, int n, int started, int in_arena);
/* The packed copy of a recurrence product's weights for its batch-1 steps
 * (rt_gemv_pack, rt_gemv_pack_bf16, rt_gemv_pack_i8 of the same arguments),
 * made on the first call into a new 64-byte aligned buffer at *P (the
 * instance's member, NULL until then; free() it) and kept: the weights do
 * not change between runs of an inference build.  Returns *P, or NULL when
 * out of memory. */
const float *rt_gemv_pack_once(float **P, int transB, int64_t N, int64_t K, const float *B, int64_t ldb);
const uint16_t *rt_gemv_pack_once_bf16(uint16_t **P, int transB, int64_t N, int64_t K, const float *B,
				       int64_t ldb);
const int8_t *rt_gemv_pack_once_i8(int8_t **P, int transB, int64_t N, int64_t K, const float *B, int64_t ldb);

/* ---- kernels: activations (owner: runtime/rt_act.c) ---------------------- */
/* One scalar function per element-wise activation of the IR (ops.def), static
 * inline so that the fused loops of emitted code inline them; alpha/beta as
 * in the ONNX RNN specification.  All are within a few ulp of the exact
 * function: libm's float functions, except for sigmoid and tanh (below),
 * the bulk of an LSTM step, which are branch-free and call nothing, so that
 * the compiler turns a fused loop of gate math into vector code (a call to
 * libm's expf, or a branch, keeps it scalar).  tests/unit/test_runtime.c
 * measures their error against double-precision references. */

/* The bits of a float and back (memcpy: no aliasing questions; compiles
 * to nothing).  The activations below clamp and select on these integer
 * bits rather than with float compares, which GCC will not turn into vector
 * selects unless -fno-trapping-math (a compare may raise FE_INVALID). */
static inline int32_t rt_fbits(float x) { int32_t i; memcpy(&i, &x, sizeof i); return i; }
/* (Selects are written as masks, not ?:, because GCC moves a conversion or
 * division, which may trap, under the condition and then keeps the branch.) */
static inline float rt_bitsf(int32_t i) { float x; memcpy(&x, &i, sizeof x); return x; }

/* e^x for the activations: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
 * Cephes' degree-6 polynomial for e^r, 2^n from the exponent bits: within 2
 * ulp for |x| <= 87.3; larger |x| (infinities included) is clamped there
 * (results 1.3e-38 and 7.8e37 instead of subnormals, zero or infinity:
 * sigmoid changes by less than 2e-38 for it).  NaN stays NaN. */
static inline float rt_expf_act(float x)
{
	const int32_t b = rt_fbits(x), ab = b & 0x7fffffff, sign = b ^ ab;
	const int32_t lim = 0x42ae999a;         /* 87.3f */
	const int32_t nan = -(int32_t)(ab > 0x7f800000);        /* masks: all ones or 0 */
	const int32_t big = -(int32_t)(ab > lim) & ~nan;
	const int32_t xb = (b & ~big) | ((sign | lim) & big);
	const float xc = rt_bitsf(xb);
	/* n = round(xc / ln2): xc / ln2 + 128.5 > 0, so truncation is floor
	 * (NaN is kept out of the conversion, where it would be undefined) */
	const int32_t n = (int32_t)(rt_bitsf(xb & ~nan) * 1.44269504088896341f + 128.5f) - 128;
	const float nf = (float)n;
	const float r = xc - nf * 0.693359375f - nf * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	const float e = p * r * r + r + 1.0f;
	return e * rt_bitsf((n + 127) * 8388608);  /* 2^n, n in [-126, 126] */
}
static inline float rt_sigmoidf(float x) { return 1.0f / (1.0f + rt_expf_act(-x)); }
/* tanh as the rational minimax approximation p(x)/q(x) of degree 13/6 on
 * [-7.9053, 7.9053] that Eigen and onnxruntime use, its value at +-7.9053
 * up to |x| = 9 and +-1 beyond (where float32 tanh rounds to +-1, so that a
 * saturated tanh passes no gradient, as in PyTorch): relative error below 3.6e-7 (6 ulp just below 1, measured
 * by tests/unit/test_runtime.c; sigmoid: 2.4 ulp) over every float,
 * and about 3 times faster than libm's tanhf, which goes through expm1f.
 * Near 0, tanh(x) == x in float; NaN stays NaN. */
static inline float rt_tanhf(float x)
{
	const int32_t b = rt_fbits(x), ab = b & 0x7fffffff, sign = b ^ ab;
	const int32_t c = 0x40fcf84f;           /* 7.90531110763549805f */
	const int32_t big = -(int32_t)(ab > c && ab <= 0x7f800000);    /* NaN stays */
	const float xc = rt_bitsf((b & ~big) | ((sign | c) & big));
	const float x2 = xc * xc;
	float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
	p = x2 * p + -8.60467152213735e-11f;
	p = x2 * p + 5.12229709037114e-08f;
	p = x2 * p + 1.48572235717979e-05f;
	p = x2 * p + 6.37261928875436e-04f;
	p = x2 * p + 4.89352455891786e-03f;
	float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
	q = x2 * q + 2.26843463243900e-03f;
	q = x2 * q + 4.89352518554385e-03f;
	const float y = xc * p / q;
	const int32_t tiny = -(int32_t)(ab < 0x39d1b717);      /* |x| < 0.0004f: all ones */
	/* |x| > 9: tanh(x) rounds to +-1 in float32, so 1 - y^2 (the derivative)
	 * is 0 there, as for a correctly rounded tanh, not 1 - tanh(7.905)^2 */
	const int32_t one = -(int32_t)(ab > 0x41100000 && ab <= 0x7f800000);
	const int32_t r = (b & tiny) | (rt_fbits(y) & ~tiny);
	return rt_bitsf((r & ~one) | ((sign | 0x3f800000) & one));
}
/* Put before a loop whose iterations are independent: the fused loops of
 * emitted code, where element j of every value depends only on element j of
 * its operands and no output shares storage with an input of the loop
 * (pass_plan.c).  The compiler then vectorises the loop without run-time
 * overlap checks, which GCC's -O2 cost model does not add. */
#if defined(__GNUC__) && !defined(__clang__)
#define RT_IVDEP _Pragma("GCC ivdep")
#else   /* clang adds overlap checks itself, and its assume_safety warns (an
	   error under -Werror) on a loop it then cannot vectorise */
#define RT_IVDEP
#endif
/* Put before the definition of the function that holds the loops of
 * emitted code (its forward pass): GCC compiles it once per x86-64 level
 * (AVX-512, AVX2 + FMA, baseline) and the dynamic loader picks the copy for
 * the CPU it runs on (an ifunc), so the fused loops run 16 (or 8) floats at
 * a time without the user's -march.  Elsewhere, and when the program is
 * built with -DRT_NO_CLONES (a target without ifunc support), it is empty:
 * on aarch64 NEON is the baseline, so the same loops (under `omp simd`, or
 * RT_IVDEP without OpenMP) run 4 floats at a time with no copy to choose. */
#if !defined(RT_NO_CLONES) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && \
	defined(__x86_64__) && defined(__linux__) && defined(__ELF__)
#define RT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RT_CLONES
#endif
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
/* Clip as ONNX defines it: max(x, lo), then min(., hi), so a lo above hi
 * gives hi everywhere; NaN stays NaN. */
static inline float rt_clipf(float x, float lo, float hi)
{
	x = x < lo ? lo : x;
	return x > hi ? hi : x;
}
/* sign: -1, 0 or 1 (0 for 0 and NaN) */
static inline float rt_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }
/* modrelu(z; b) = sign(z) relu(|z| + b) (docs/cells.md) */
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
void rt_softmax_f64(double *y, const double *x, int64_t outer, int64_t n, int64_t inner);
void rt_log_softmax_f64(double *y, const double *x, int64_t outer, int64_t n, int64_t inner);

/* ---- kernels: convolution, padding, reductions (owner: runtime/rt_nn.c) --- */

/* ONNX Conv: X [N, C, D_1..D_nsp] (xdims has nsp + 2 entries), W [M, C/group,
 * K_1..K_nsp] (kdims: the K), optional B [M] (NULL: none), Y [N, M, O_1..]
 * with O_a = (D_a + pads[a] + pads[nsp + a] - dil[a] (K_a - 1) - 1) /
 * strides[a] + 1.  rt_conv: im2col tiles on the stack and rt_sgemm (no
 * allocation); rt_conv_ref: the plain loop nest (double accumulation) the
 * unit tests compare it with. */
void rt_conv(float *y, const float *x, const float *w, const float *b, int nsp, const int64_t *xdims,
	     int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
	     const int64_t *dil);
/* The same in double precision (f64 Conv), over rt_dgemm. */
void rt_conv_f64(double *y, const double *x, const double *w, const double *b, int nsp, const int64_t *xdims,
		 int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		 const int64_t *dil);
void rt_conv_ref(float *y, const float *x, const float *w, const float *b, int nsp, const int64_t *xdims,
		 int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		 const int64_t *dil);

/* The gradients of rt_conv (same geometry) for dY [N, M, O..]:
 * rt_conv_grad_x: dX [N, C, D..] (every dY element adds dy * w to the input
 * positions its taps read; none in the padding); rt_conv_grad_w: dW
 * [M, C/group, K..] = the sum over the batch and the output positions of dy
 * times the input tap (double accumulation).  The bias gradient is dY summed
 * over every axis but 1. */
void rt_conv_grad_x(float *dx, const float *dy, const float *w, int nsp, const int64_t *xdims, int64_t m,
		    int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		    const int64_t *dil);
void rt_conv_grad_w(float *dw, const float *dy, const float *x, int nsp, const int64_t *xdims, int64_t m,
		    int64_t group, const int64_t *kdims, const int64_t *strides, const int64_t *pads,
		    const int64_t *dil);

/* ONNX Pad on every axis: pads [2 rank] = begins then ends (negative ones
 * crop); Y dims xdims[a] + pads[a] + pads[rank + a].  mode: constant (value,
 * one element, or zeros when NULL), edge (the border element repeated),
 * reflect (mirrored about the border element, without repeating it). */
enum { RT_PAD_CONSTANT = 0, RT_PAD_REFLECT = 1, RT_PAD_EDGE = 2 };
void rt_pad(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const int64_t *pads,
	    int mode, const void *value);

/* The gradient of rt_pad (float32): dX = zeros, then every element of dY
 * added to the element of X it was copied from (constant positions give
 * nothing; with edge and reflect an element of X may receive several). */
void rt_pad_grad(float *dx, const float *dy, int rank, const int64_t *xdims, const int64_t *pads, int mode);

/* Reductions of X over the axes a with red[a] != 0, computed in double; Y
 * holds the kept axes in order (keepdims does not change the layout).  Max and
 * Min let a NaN win; LogSumExp subtracts the maximum first. */
enum {
	RT_REDUCE_SUM, RT_REDUCE_MEAN, RT_REDUCE_MAX, RT_REDUCE_MIN, RT_REDUCE_PROD, RT_REDUCE_L1,
	RT_REDUCE_L2, RT_REDUCE_LOGSUM, RT_REDUCE_LOGSUMEXP, RT_REDUCE_SUMSQUARE
};
void rt_reduce_f32(int kind, float *y, const float *x, int rank, const int64_t *xdims, const unsigned char *red);
void rt_reduce_f64(int kind, double *y, const double *x, int rank, const int64_t *xdims,
		   const unsigned char *red);
/* The same of int64 / int32 X, exact in the element type (Sum, Prod, L1 and
 * SumSquare wrap modulo 2^64 / 2^32; Max, Min): the kinds ONNX defines for
 * integers but Mean, L2, LogSum and LogSumExp. */
void rt_reduce_i64(int kind, int64_t *y, const int64_t *x, int rank, const int64_t *xdims,
		   const unsigned char *red);
void rt_reduce_i32(int kind, int32_t *y, const int32_t *x, int rank, const int64_t *xdims,
		   const unsigned char *red);

/* ArgMax (is_min 0) / ArgMin (1) along the middle axis of X [outer, n, inner]
 * (n >= 1): Y [outer, inner] the index of the first extreme, or of the last
 * when last != 0. */
void rt_argmax_f32(int64_t *y, const float *x, int64_t outer, int64_t n, int64_t inner, int is_min, int last);
void rt_argmax_f64(int64_t *y, const double *x, int64_t outer, int64_t n, int64_t inner, int is_min, int last);

/* MaxPool / AveragePool over the spatial axes of X [N, C, D..] (xdims:
 * nsp + 2 entries) into Y [N, C, ysp..] with kernel k, strides st, pads
 * (begins then ends) and dilations dil.  Max ignores positions in the
 * padding; RT_POOL_AVG divides by the window's positions inside X,
 * RT_POOL_AVG_PADS by those inside the padded X (count_include_pad).  idx
 * (MaxPool's Indices, may be NULL): the flat row-major index into X of each
 * maximum (the first on ties); RT_POOL_MAX_CM: the same maxima, indices
 * column-major over the spatial axes (storage_order 1), plus the plane's
 * offset (n C + c) times the plane size. */
enum { RT_POOL_MAX, RT_POOL_AVG, RT_POOL_AVG_PADS, RT_POOL_MAX_CM };
void rt_pool(int kind, float *y, int64_t *idx, const float *x, int nsp, const int64_t *xdims, const int64_t *ysp,
	     const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil);
void rt_pool_f64(int kind, double *y, int64_t *idx, const double *x, int nsp, const int64_t *xdims,
		 const int64_t *ysp, const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil);

/* LayerNormalization of X viewed as [outer, inner]: each row normalised by
 * its mean and variance (in double), times scale[inner], plus bias[inner]
 * (NULL: none); mean and invstd (each [outer], may be NULL) receive the row's
 * mean and 1 / sqrt(variance + eps). */
void rt_layernorm(float *y, float *mean, float *invstd, const float *x, const float *scale, const float *bias,
		  int64_t outer, int64_t inner, float eps);
void rt_layernorm_f64(double *y, double *mean, double *invstd, const double *x, const double *scale,
		      const double *bias, int64_t outer, int64_t inner, float eps);
/* BatchNormalization in inference mode, X [n, c, inner]:
 * Y = (X - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]. */
void rt_batchnorm(float *y, const float *x, const float *scale, const float *bias, const float *mean,
		  const float *var, int64_t n, int64_t c, int64_t inner, float eps);
void rt_batchnorm_f64(double *y, const double *x, const double *scale, const double *bias, const double *mean,
		      const double *var, int64_t n, int64_t c, int64_t inner, float eps);

/* BatchNormalization in training mode, X [n, c, inner]: each channel
 * normalised by its batch mean and biased variance (in double) over n and
 * inner; run_mean / run_var (may be NULL) = mean / var * momentum + the
 * batch's * (1 - momentum). */
void rt_batchnorm_train(float *y, float *run_mean, float *run_var, const float *x, const float *scale,
			const float *bias, const float *mean, const float *var, int64_t n, int64_t c, int64_t inner,
			float eps, float momentum);

/* ONNX Tile: Y dims xdims[a] * reps[a], Y[i..] = X[i_a mod xdims[a]..]. */
void rt_tile(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const int64_t *reps);
/* ONNX GatherElements: indices (int32 when idx_dtype == 6, else int64) of
 * dims idims (the rank of X); Y[i..] = X[i.. with i_axis = indices[i..]],
 * negative indices counting from xdims[axis].  RT_ERR_INDEX if one is out
 * of [-xdims[axis], xdims[axis]) (Y then partly written). */
int rt_gather_elements(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, const void *idx,
		       int idx_dtype, const int64_t *idims, int axis);

/* SoftmaxCrossEntropyLoss (from_logits 1: X are scores, log-softmax over
 * the classes, written to logp [n, c, d] when not NULL) and
 * NegativeLogLikelihoodLoss (from_logits 0: X are log-probabilities) for X
 * [n, c, d] (d: the product of the axes after the classes) and target
 * [n, d]: l = -w[t] * logp[t] (w NULL: 1), 0 for targets equal to ignore
 * (has_ignore).  loss: [n, d] (RT_LOSS_NONE), the sum, or the sum divided by
 * the sum of the weights of the targets not ignored (RT_LOSS_MEAN).
 * RT_ERR_INDEX for a target outside [0, c) that is not ignored. */
enum { RT_LOSS_NONE, RT_LOSS_SUM, RT_LOSS_MEAN };
int rt_class_loss(float *loss, float *logp, const float *x, int from_logits, const int64_t *target, const float *w,
		  int64_t n, int64_t c, int64_t d, int reduction, int has_ignore, int64_t ignore);

/* The gradients of rt_class_loss with from_logits 0 (X: the
 * log-probabilities) for dloss ([n, d] for RT_LOSS_NONE, else one value),
 * each skipped when NULL: dx = 0 except -w[t] * g at the target class, and
 * dw[k] = the sum over the targets of class k of g * (-X[t] - L), where g is
 * dloss (divided by the weight sum of the targets not ignored for
 * RT_LOSS_MEAN) and L the mean loss for RT_LOSS_MEAN, else 0.  RT_ERR_INDEX
 * as there. */
int rt_class_loss_grad(float *dx, float *dw, const float *dloss, const float *x, const int64_t *target,
		       const float *w, int64_t n, int64_t c, int64_t d, int reduction, int has_ignore, int64_t ignore);

/* ONNX ConvTranspose: X [N, C, D..], W [C, M/group, K..], B [M] (NULL: none),
 * Y [N, M, ysp..]: every input element adds x * w to the output position
 * i = d * strides - pads + k * dil it reaches (pads: the begins). */
void rt_conv_transpose(float *y, const float *x, const float *w, const float *b, int nsp, const int64_t *xdims,
		       const int64_t *ysp, int64_t m, int64_t group, const int64_t *kdims, const int64_t *strides,
		       const int64_t *pads, const int64_t *dil);
/* ScatterElements / ScatterND: Y = X (copied unless y == x), then updates
 * written (or combined: add, mul, max, min; float32 only, is_f32) at the
 * positions the int64 indices name; negative indices count back.
 * ScatterND's indices are nidx tuples of q entries, each naming a slice of
 * the trailing rank - q axes.  RT_ERR_INDEX for an index out of range. */
enum { RT_SCATTER_NONE, RT_SCATTER_ADD, RT_SCATTER_MUL, RT_SCATTER_MAX, RT_SCATTER_MIN };
int rt_scatter_elements(void *y, const void *x, size_t esize, int is_f32, int rank, const int64_t *xdims,
			const int64_t *idx, const void *upd, const int64_t *idims, int axis, int reduction);
int rt_scatter_nd(void *y, const void *x, size_t esize, int is_f32, int rank, const int64_t *xdims,
		  const int64_t *idx, int64_t nidx, int q, const void *upd, int reduction);
/* GatherND: for each of the batch_dims leading axes' positions, nidx_per_batch
 * tuples of q int64 entries, each copying the slice of X's trailing axes it
 * names.  RT_ERR_INDEX for an index out of range. */
int rt_gather_nd(void *y, const void *x, size_t esize, int rank, const int64_t *xdims, int batch_dims,
		 const int64_t *idx, int64_t nidx_per_batch, int q);
/* InstanceNormalization of X [n, c, inner]: per (n, c) statistics in double. */
void rt_instancenorm(float *y, const float *x, const float *scale, const float *bias, int64_t n, int64_t c,
		     int64_t inner, float eps);

/* LRN of X [n, c, inner]: Y = X / (bias + alpha / size * the sum of X^2 over
 * the channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2))^beta. */
void rt_lrn(float *y, const float *x, int64_t n, int64_t c, int64_t inner, int64_t size, float alpha, float beta,
	    float bias);
/* MeanVarianceNormalization: Y = (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9),
 * the expectations over the axes with reduced[a] != 0 (in double).
 * RT_ERR_NOMEM, RT_ERR_ARG for a rank above RT_TF_MAXRANK. */
int rt_mvn(float *y, const float *x, int rank, const int64_t *dims, const unsigned char *reduced);
/* MaxUnpool: Y [ydims] zero but for X's nx values, each written at the
 * coordinates its index (row-major over idims: N, C and the unpooled size
 * that kernel, strides and pads give) names.  RT_ERR_INDEX for an index
 * outside idims or coordinates outside Y. */
int rt_max_unpool(float *y, const float *x, const int64_t *idx, int64_t nx, int rank, const int64_t *idims,
		  const int64_t *ydims);

/* ONNX ReverseSequence: X [steps, batch, inner] (time_axis 0) or [batch,
 * steps, inner] (time_axis 1); Y = X with the first lens[b] steps of batch
 * row b reversed and the rest copied.  RT_ERR_INDEX (Y partly written) for
 * a length outside [0, steps]. */
int rt_reverse_sequence(void *y, const void *x, size_t esize, int64_t steps, int64_t batch, int64_t inner,
			int time_axis, const int64_t *lens);

/* ONNX TfIdfVectorizer over integer rows X [rows, cols] (int32 when x_i32,
 * else int64) into Y [rows, width].  The pool holds npool ids; levels[k]
 * (k < nlevels) is where its (k+1)-grams start (each k+1 ids, up to the next
 * level or npool), the n-grams numbered in pool order; n-gram i counts into
 * column columns[i].  An n-gram of length n (min_n <= n <= max_n) is the ids
 * at p, p + d, ..., p + (n-1) d for a distance d = 1 .. max_skip + 1 (d = 1
 * only for unigrams); each (p, d) occurrence counts once.  Mode TF: the
 * counts; IDF: 1 for a present n-gram, times weights[i]; TFIDF: the counts
 * times weights[i] (weights NULL: 1). */
enum { RT_TFIDF_TF, RT_TFIDF_IDF, RT_TFIDF_TFIDF };
void rt_tfidf(float *y, const void *x, int x_i32, int64_t rows, int64_t cols, int64_t width, const int64_t *pool,
	      int64_t npool, const int64_t *levels, int nlevels, const int64_t *columns, const float *weights,
	      int64_t min_n, int64_t max_n, int64_t max_skip, int mode);

/* Data-dependent lengths (NonZero, Compress, Unique, NonMaxSuppression): the
 * output buffers are sized for the bound the caller computes (numel, the axis
 * size, batches * classes * boxes); each kernel sets *n to the actual length
 * and writes its outputs packed at their actual dims (row-major, n in place
 * of the bound).  Each returns RT_OK or the status named (then *n = 0, the
 * outputs partly written); none allocates memory.  Element types are ONNX's
 * numbers (1 float, 11 double, 6 int32, 7 int64, 9 bool, ...: rt_dtype_size). */

/* ONNX NonZero: Y int64 [rank, n], the coordinates of the nonzero elements of
 * X (dims[rank]) in row-major order (floats: -0.0 is zero, NaN is not). */
int rt_nonzero(int64_t *n, int64_t *y, const void *x, int dtype, int rank, const int64_t *dims);
/* ONNX Compress (numpy.compress): X [outer, len, inner], cond bool [ncond];
 * Y [outer, n, inner] holds the slices i whose cond[i] is true.  RT_ERR_INDEX
 * when a true entry lies beyond the axis (i >= len). */
int rt_compress(int64_t *n, void *y, const void *x, size_t esize, int64_t outer, int64_t len, int64_t inner,
		const uint8_t *cond, int64_t ncond);
/* ONNX Unique of the len slices X[:, i, :] of X [outer, len, inner] (axis
 * given; else outer = inner = 1 over the flattened X), compared element by
 * element in row-major order (numerically: -0.0 equals 0.0, NaN equals NaN
 * and sorts last).  Y [outer, n, inner] holds the distinct slices, ascending
 * in lexicographic order when sorted, else in the order they first occur;
 * indices[n] where each first occurs, inverse[len] the position in Y of each
 * slice of X, counts[n] how often each occurs (each of the three may be
 * NULL).  Y is used as scratch at [outer, len, inner] before being packed.
 * O(len * n) slice comparisons. */
int rt_unique(int64_t *n, void *y, int64_t *indices, int64_t *inverse, int64_t *counts, const void *x, int dtype,
	      int64_t outer, int64_t len, int64_t inner, int sorted);
/* ONNX NonMaxSuppression: boxes [batches, nboxes, 4] (center_point_box 0:
 * y1, x1, y2, x2 of any two opposite corners; 1: x, y centre, width,
 * height), scores [batches, classes, nboxes]; Y int64 [n, 3] rows (batch,
 * class, box).  Per batch and class, the boxes whose score is above
 * score_threshold (when has_score_threshold; NaN scores never) are taken by
 * descending score (ties: lower index first) unless their IOU with a box
 * already taken exceeds iou_threshold, at most max_per_class (<= 0: none).
 * RT_ERR_ARG for an iou_threshold outside [0, 1].  O(nboxes^2) per class. */
int rt_nms(int64_t *n, int64_t *y, const float *boxes, const float *scores, int64_t batches, int64_t classes,
	   int64_t nboxes, int64_t max_per_class, float iou_threshold, int has_score_threshold, float score_threshold,
	   int center_point_box);

/* TopK along the middle axis of X [outer, n, inner] (k <= n): the k largest
 * (or smallest) elements in order, ties to the lower index, into vals and
 * idx [outer, k, inner].  O(n k) per row: meant for small k. */
void rt_topk_f32(float *vals, int64_t *idx, const float *x, int64_t outer, int64_t n, int64_t inner, int64_t k,
		 int largest);
/* The same on integers (k may be n: a sort, ties kept in index order);
 * O(n k) per row. */
void rt_topk_i64(int64_t *vals, int64_t *idx, const int64_t *x, int64_t outer, int64_t n, int64_t inner,
		 int64_t k, int largest);
void rt_topk_i32(int32_t *vals, int64_t *idx, const int32_t *x, int64_t outer, int64_t n, int64_t inner,
		 int64_t k, int largest);

/* ---- linear algebra and signals (owner: runtime/rt_linalg.c) ------------- */
/* float32 (f64 = 0) or float64 (f64 = 1) tensors, sums in double. */

/* Det of each of the batch n x n row-major matrices of X (LU with partial
 * pivoting).  RT_ERR_NOMEM, RT_ERR_SHAPE. */
int rt_det(void *y, const void *x, int f64, int64_t batch, int64_t n);
/* Einsum of nops operands: operand o has rank[o] axes, their sizes and
 * label numbers the next rank[o] entries of dims and labels.  Labels
 * 0 .. nout - 1 are Y's axes in order, the others are summed over; a label
 * repeated in one operand takes its diagonal.  RT_ERR_SHAPE when one label
 * has two sizes, RT_ERR_ARG beyond RT_EINSUM_MAXOPS / RT_EINSUM_MAXLAB. */
enum { RT_EINSUM_MAXOPS = 16, RT_EINSUM_MAXLAB = 64 };
int rt_einsum(void *y, int f64, int nops, const void *const *x, const int *rank, const int64_t *dims,
	      const int *labels, int nlab, int nout);
/* DFT along the middle axis of X [outer, len, inner, cin] (cin 1: real, 2:
 * complex) into Y [outer, nbins, inner, 2]: n-point transforms (X cut to n
 * or padded with zeros), the first nbins (<= n) bins; inverse: the sign of
 * the exponent is + and the result divided by n.  RT_ERR_SHAPE. */
int rt_dft(void *y, const void *x, int f64, int64_t outer, int64_t len, int64_t inner, int64_t cin, int64_t n,
	   int64_t nbins, int inverse);
/* STFT of signal X [batch, len, cin]: frame f is X[f * step .. f * step + n)
 * times window [n] (NULL: none); Y [batch, frames, nbins, 2] its first nbins
 * DFT bins.  RT_ERR_SHAPE when the frames do not fit in len. */
int rt_stft(void *y, const void *x, int f64, int64_t batch, int64_t len, int64_t cin, int64_t step,
	    const void *window, int64_t n, int64_t frames, int64_t nbins);

/* ---- initialisers (owner: runtime/rt_init.c) ----------------------------- */
/* Seeded parameter initialisers (docs/cells.md section 6), used by the compiler to
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

/* ---- random operators (owner: runtime/rt_random.c) ----------------------- */
/* RandomUniform(Like), RandomNormal(Like), Bernoulli and Dropout in training
 * mode draw from rt_rng streams (xoshiro256**, above).  A generated model
 * keeps one stream per such node in its instance, seeded from the node's
 * `seed` attribute when it has one and otherwise as stream k (the node's
 * number among the model's random nodes) of the instance's run-time seed;
 * NAME_seed (re)starts every stream, NAME_create calls it with seed 0, and
 * NAME_reset leaves the streams alone.  Elements are drawn in row-major
 * order, one uniform u in [0, 1) (53 bits) per element, or one normal
 * (Box-Muller from two uniforms).  dtype codes are ONNX's: 1 float, 11
 * double; Bernoulli's output also 2..7 (integers) and 9 (bool, one byte).
 * The functions return RT_ERR_ARG for a dtype they do not handle (and
 * rt_dropout for a ratio outside [0, 1)), leaving their outputs untouched. */
/* The stream `stream` of run-time seed `seed`: the seed scrambled by
 * splitmix64, the stream number times an odd constant xor'ed in, then
 * rt_rng_seed: distinct streams of one seed start far apart. */
void rt_rng_seed_stream(rt_rng *r, uint64_t seed, uint64_t stream);
/* y[i] = low + (high - low) u (then rounded to dtype). */
int rt_random_uniform(void *y, int dtype, int64_t n, double low, double high, rt_rng *r);
/* y[i] = mean + scale z, z ~ N(0, 1). */
int rt_random_normal(void *y, int dtype, int64_t n, double mean, double scale, rt_rng *r);
/* Bernoulli: y[i] = 1 if u < p[i] else 0 (p of pdtype 1 or 11): one with
 * probability p[i], exactly 0 for p <= 0 and 1 for p >= 1. */
int rt_bernoulli(void *y, int ydtype, const void *p, int pdtype, int64_t n, rt_rng *r);
/* Dropout, x and y of dtype 1 or 11, mask bytes 0/1 (may be NULL): with
 * training 0 or ratio 0, y = x and mask all 1, drawing nothing (y may be x,
 * or NULL when only the mask is wanted); otherwise
 * element i is kept (mask 1, y = x / (1 - ratio)) when u >= ratio and
 * dropped (mask 0, y = 0) when u < ratio. */
int rt_dropout(void *y, unsigned char *mask, const void *x, int dtype, int64_t n, double ratio, int training,
	       rt_rng *r);

/* ---- optimisers (owner: runtime/rt_optim.c) ------------------------------ */
/* Parameter updates for training (docs/training.md, "Optimisers"), with the semantics of
 * PyTorch 1.13's torch.optim (single-tensor code path) where PyTorch has the
 * optimiser, and Sutskever et al. (2013) for classical momentum (CM) and
 * Nesterov's accelerated gradient (NAG).  One rt_optim holds the
 * hyper-parameters and the step counter; the per-parameter state lives in a
 * caller-provided float buffer of rt_optim_slots(o) * n floats, slot-major
 * (slot k of a parameter of n elements at state + k * n), so a checkpoint
 * saves it as plain tensors ("@opt/<param>/<rt_optim_slot_name>").  Each
 * optimiser step is: rt_optim_begin_step once, then rt_optim_update once per
 * parameter tensor with that tensor's learning rate (parameter groups).
 * Slots: SGD 1 if momentum != 0 else 0 (momentum_buffer); RMSprop 1
 * (square_avg) + 1 if momentum > 0 (momentum_buffer) + 1 if centered
 * (grad_avg); Adam 2 (exp_avg, exp_avg_sq) + 1 if amsgrad (max_exp_avg_sq);
 * Adagrad 1 (sum); CM and NAG 1 (velocity v).
 * Hyper-parameters are doubles, as PyTorch's Python floats: scalars derived
 * from them (bias corrections, 1 - beta) are computed in double and rounded
 * to float once, as PyTorch does before its float kernels.
 * NAG keeps the parameter buffer at the look-ahead point p + mu_{t+1} v (the
 * point whose gradient the next update needs); rt_optim_params recovers p. */

typedef enum rt_optim_kind {
	RT_OPT_SGD, RT_OPT_RMSPROP, RT_OPT_ADAM, RT_OPT_ADAGRAD, RT_OPT_CM, RT_OPT_NAG, RT_OPT_COUNT
} rt_optim_kind;

typedef struct rt_optim {
	int kind;               /* rt_optim_kind */
	double momentum;        /* SGD, RMSprop: momentum factor (0: none); CM/NAG
	                           with schedule == 0: the constant mu */
	double dampening;       /* SGD */
	int nesterov;           /* SGD: PyTorch's Nesterov form (needs momentum > 0,
	                           dampening 0) */
	double weight_decay;    /* every kind: g += weight_decay * p before the update */
	double alpha;           /* RMSprop smoothing constant */
	int centered;           /* RMSprop: divide by sqrt(E[g^2] - E[g]^2) */
	double beta1, beta2;    /* Adam */
	int amsgrad;            /* Adam: use the running maximum of exp_avg_sq */
	double eps;             /* RMSprop, Adam, Adagrad: added outside the square root */
	double lr_decay;        /* Adagrad: lr / (1 + (t - 1) * lr_decay) */
	double initial_accumulator_value; /* Adagrad: initial value of sum */
	int schedule;           /* CM/NAG: 1 = mu_t = min(1 - 2^(-1 - log2(floor(t/250) + 1)),
	                           mu_max) with t the 0-based update index; 0 = momentum */
	double mu_max;          /* CM/NAG: the schedule's cap */
	double final_mu;        /* CM/NAG: mu = min(mu_t, final_mu) in the final phase */
	int64_t final_low_steps; /* CM/NAG: length of the final low-momentum phase:
	                           updates t (1-based) > total_steps - final_low_steps */
	int64_t total_steps;    /* CM/NAG: updates in the whole run (final phase only) */
	int64_t step;           /* updates begun (1-based number of the current one);
	                           checkpoints save it */
} rt_optim;

/* PyTorch's defaults for kind (SGD: no momentum; RMSprop alpha 0.99, eps 1e-8;
 * Adam betas (0.9, 0.999), eps 1e-8; Adagrad eps 1e-10; CM/NAG: schedule on,
 * mu_max 0.99, final_mu 0.9, no final phase); step 0. */
void rt_optim_defaults(rt_optim *o, int kind);
/* NULL when o is usable, else a sentence saying which field is wrong. */
const char *rt_optim_invalid(const rt_optim *o);
int rt_optim_slots(const rt_optim *o);                  /* floats per element */
const char *rt_optim_slot_name(const rt_optim *o, int k); /* "exp_avg", ...; NULL past the end */
/* Initial state of one parameter: zeros, Adagrad's sum = initial_accumulator_value. */
void rt_optim_init_state(const rt_optim *o, float *state, int64_t n);
/* Momentum of CM/NAG for update `step` (1-based), schedule and final phase applied. */
double rt_optim_mu(const rt_optim *o, int64_t step);
/* Starts the next optimiser step (o->step++). */
void rt_optim_begin_step(rt_optim *o);
/* Updates one parameter p [n] in place with its gradient g [n] (not modified)
 * and state [slots * n], learning rate lr.  RT_ERR_ARG (nothing changed) when
 * no step was begun or o is invalid. */
int rt_optim_update(const rt_optim *o, double lr, float *p, const float *g, float *state, int64_t n);
/* The parameters to evaluate or export: p itself, except for NAG, whose
 * buffer holds the look-ahead point q = p + mu_{step+1} v: out = q - mu v.
 * out may be p (then NAG's buffer no longer holds the look-ahead point). */
void rt_optim_params(const rt_optim *o, float *out, const float *p, const float *state, int64_t n);

/* torch.nn.utils.clip_grad_norm_ (L2): norm = ||concatenation of g[0..n)||,
 * coef = max_norm / (norm + 1e-6); every g[k] [numel[k]] is multiplied by
 * coef unless coef >= 1 (so also by NaN when the norm is NaN, as PyTorch).
 * Returns the norm before clipping. */
float rt_clip_grad_norm(int n, float *const *g, const int64_t *numel, float max_norm);

/* The element-wise kernels behind rt_optim_update, shared with the code
 * cellc emits for the ONNX ai.onnx.preview.training operators.  Outputs may
 * be the corresponding inputs (in place); gr = g + wd * x throughout.
 * Multiply-adds are fused where PyTorch's AVX2 kernels fuse them (rt_optim.c);
 * the adam kernel rounds beta1, beta2, 1 - beta1 and 1 - beta2 to float.
 *  momentum: v_new = alpha * v + beta * gr;
 *            x_new = x - lr * (nesterov ? gr + alpha * v_new : v_new)
 *  adam:     m_new = beta1 * m + (1 - beta1) * gr;
 *            v_new = beta2 * v + (1 - beta2) * gr^2;  vmax = max(vmax, v_new) if vmax;
 *            x_new = post * (x - step_size * m_new / (sqrt(v_new or vmax) / bc2_sqrt + eps))
 *  adagrad:  h_new = h + gr^2;  x_new = x - lr * gr / (sqrt(h_new) + eps) */
void rt_momentum_kernel(float *x_new, float *v_new, const float *x, const float *g, const float *v,
			int64_t n, float lr, float wd, float alpha, float beta, int nesterov);
void rt_adam_kernel(float *x_new, float *m_new, float *v_new, float *vmax, const float *x,
		    const float *g, const float *m, const float *v, int64_t n, float step_size,
		    float bc2_sqrt, float eps, float wd, double beta1, double beta2, float post);
void rt_adagrad_kernel(float *x_new, float *h_new, const float *x, const float *g, const float *h,
		       int64_t n, float lr, float wd, float eps);
/* ---- training data and plots (owner: runtime/rt_data.c, rt_inflate.c,
 * rt_svg.c; used by the training program, templates/train_main.c) -------- */
/* Arrays read whole from an IDX file (the MNIST/Fashion-MNIST format) or a
 * NumPy .npy file (versions 1-3, C order, float32 float64 int64 int32 int16
 * int8 uint8, either byte order), gzip-compressed or not, recognised by their
 * first bytes.  Nothing in a file is trusted; on failure `err` (errlen bytes)
 * holds a sentence that names the file and the problem (truncated data,
 * impossible header, ...), and the array is empty. */
typedef struct rt_array {
	int dtype;              /* ONNX TensorProto.DataType code */
	int rank;               /* 0..RT_TF_MAXRANK */
	int64_t dims[RT_TF_MAXRANK]; /* [rank] */
	void *data;             /* malloc'd, row-major, host byte order */
	size_t nbytes;          /* numel * element size */
} rt_array;

int rt_array_read(rt_array *a, const char *path, char *err, size_t errlen);
/* the same for a file image in memory (tests); err does not name a file */
int rt_array_parse(rt_array *a, const void *mem, size_t size, char *err, size_t errlen);
void rt_array_free(rt_array *a);
int64_t rt_array_numel(const rt_array *a);
/* Converts the elements in place to float32 / to int64 (RT_ERR_FORMAT when
 * an element is not an integer). */
int rt_array_to_f32(rt_array *a, char *err, size_t errlen);
int rt_array_to_i64(rt_array *a, char *err, size_t errlen);
const char *rt_dtype_name(int dtype);   /* "float32", ...; for messages */

/* Raw DEFLATE (RFC 1951) and gzip (RFC 1952, concatenated members, CRC-32
 * and length checked) decompression into a malloc'd *out of *outn bytes, at
 * most max_out of them (RT_ERR_FORMAT beyond).  RT_ERR_TRUNCATED,
 * RT_ERR_FORMAT, RT_ERR_CHECKSUM or RT_ERR_NOMEM with a sentence in err. */
int rt_inflate(const void *in, size_t n, size_t max_out, void **out, size_t *outn, char *err,
	       size_t errlen);
int rt_gunzip(const void *in, size_t n, size_t max_out, void **out, size_t *outn, char *err,
	      size_t errlen);

/* Line plots as SVG, written atomically (temporary file, then rename).
 * Points with a non-finite coordinate (or y <= 0 when log_y) break the line. */
typedef struct rt_series {
	const char *name;       /* legend entry */
	int64_t n;              /* points */
	const double *x, *y;    /* [n] */
} rt_series;

typedef struct rt_plot {
	const char *title, *xlabel, *ylabel;
	int log_y;              /* 1: logarithmic y axis */
} rt_plot;

int rt_svg_plot(const char *path, const rt_plot *p, int nseries, const rt_series *s);
/* ---- kernels: image sampling (owner: runtime/rt_image.c) ---- */

/* ONNX Resize (and Upsample) of X [xdims] into Y [ydims], any rank <=
 * RT_TF_MAXRANK: scales[a] the factor of axis a (the scales input, or
 * ydims[a] / xdims[a] when sizes gave the size), roi [2 rank] the starts then
 * the ends of tf_crop_and_resize (NULL: none).  Coordinates in double. */
enum { RT_RESIZE_NEAREST = 0, RT_RESIZE_LINEAR = 1, RT_RESIZE_CUBIC = 2 };
enum {
	RT_COORD_HALF_PIXEL = 0, RT_COORD_HALF_PIXEL_SYMMETRIC = 1, RT_COORD_PYTORCH_HALF_PIXEL = 2,
	RT_COORD_ALIGN_CORNERS = 3, RT_COORD_ASYMMETRIC = 4, RT_COORD_TF_CROP_AND_RESIZE = 5,
	RT_COORD_TF_HALF_PIXEL_FOR_NN = 6,      /* opset 11 only */
};
enum {
	RT_NEAREST_ROUND_PREFER_FLOOR = 0, RT_NEAREST_ROUND_PREFER_CEIL = 1, RT_NEAREST_FLOOR = 2,
	RT_NEAREST_CEIL = 3,
};
typedef struct rt_resize_mode {
	int mode;               /* RT_RESIZE_* */
	int coord;              /* RT_COORD_*: coordinate_transformation_mode */
	int nearest;            /* RT_NEAREST_*: nearest_mode */
	int exclude_outside;    /* 1: weights of positions outside X are 0, the rest renormalised */
	double cubic_a;         /* cubic_coeff_a */
	float extrapolation;    /* extrapolation_value (tf_crop_and_resize) */
} rt_resize_mode;
void rt_resize(float *y, const float *x, int rank, const int64_t *xdims, const int64_t *ydims, const double *scales,
	       const double *roi, const rt_resize_mode *m);

/* ONNX GridSample (2-D): X [n, c, h, w] sampled at grid [n, ho, wo, 2] (x then
 * y, -1..1 spanning the image) into Y [n, c, ho, wo].  mode: RT_GRID_LINEAR
 * (bilinear), RT_GRID_NEAREST (halves to even) or RT_GRID_CUBIC (bicubic, A =
 * -0.75); padding: RT_GRID_PAD_ZEROS, _BORDER or _REFLECTION.  A NaN grid
 * value samples zeros. */
enum { RT_GRID_LINEAR = 0, RT_GRID_NEAREST = 1, RT_GRID_CUBIC = 2 };
enum { RT_GRID_PAD_ZEROS = 0, RT_GRID_PAD_BORDER = 1, RT_GRID_PAD_REFLECTION = 2 };
void rt_grid_sample(float *y, const float *x, const float *grid, int64_t n, int64_t c, int64_t h, int64_t w,
		    int64_t ho, int64_t wo, int mode, int padding, int align_corners);

/* ONNX RoiAlign: X [n, c, h, w], rois [nroi, 4] (x1, y1, x2, y2 in the
 * image's coordinates times spatial_scale), batch [nroi] (the image of each
 * box) -> Y [nroi, c, oh, ow]: each bin the average (max_mode 0) or the
 * maximum of sampling_ratio^2 bilinear samples (0: ceil(box size / output
 * size) per axis, at most 2^20; none for an empty or negative box: 0).  half_pixel 1: coordinates shifted by -0.5
 * (coordinate_transformation_mode half_pixel); 0: output_half_pixel (no shift,
 * boxes at least 1 pixel).  RT_ERR_INDEX (Y untouched) for a batch index
 * outside [0, n). */
int rt_roi_align(float *y, const float *x, const float *rois, const int64_t *batch, int64_t n, int64_t c,
		 int64_t h, int64_t w, int64_t nroi, int64_t oh, int64_t ow, int64_t sampling_ratio,
		 float spatial_scale, int half_pixel, int max_mode);

/* ---- float16 and bfloat16 (owner: runtime/rt_half.c) ----------------------
 * cellc computes FLOAT16 and BFLOAT16 tensors in float32; these convert at the
 * boundaries.  rt_round_f16: the nearest float16 value (ties to even, from the
 * exact input; 65520 and above: infinity), as a float.  rt_f32_to_f16 /
 * rt_f16_to_f32: the binary16 encoding.  bfloat16 keeps the upper half of the
 * float32 encoding (rt_f32_to_bf16 truncates, as ONNX's reference Cast does;
 * a NaN stays a NaN); rt_round_bf16 is that value as a float;
 * rt_f32_to_bf16_nearest rounds to the nearest instead (ties to even: the
 * weights of --weights bf16, rounded alike by the compiler and by
 * rt_gemv_pack_bf16). */
float rt_round_f16(double x);
uint16_t rt_f32_to_f16(float x);
float rt_f16_to_f32(uint16_t h);
uint16_t rt_f32_to_bf16(float x);
uint16_t rt_f32_to_bf16_nearest(float x);
float rt_bf16_to_f32(uint16_t h);
float rt_round_bf16(float x);

/* ---- quantization (owner: runtime/rt_quant.c) -----------------------------
 * dt: the ONNX element type of the quantized tensor, 2 (uint8) or 3 (int8);
 * 6 (int32) where said.  A zero point NULL is 0; nzp 1: one for all, else one
 * per row / column / channel as said.  Saturating, round half to even. */
/* QuantizeLinear, X viewed as [outer, n, inner]: Y = sat(rint(X / scale[c]) +
 * zp[c]), scale and zp [n] (n 1: per tensor). */
void rt_quantize_linear(void *y, int dt, const float *x, const float *scale, const void *zp, int64_t outer,
			int64_t n, int64_t inner);
/* DequantizeLinear (dt 2, 3 or 6): Y = (X - zp[c]) * scale[c]. */
void rt_dequantize_linear(float *y, const void *x, int dt, const float *scale, const void *zp, int64_t outer,
			  int64_t n, int64_t inner);
/* DynamicQuantizeLinear, uint8: scale = (max(0, max X) - min(0, min X)) / 255,
 * zp = sat(rint(-min(0, min X) / scale)), Y = sat(rint(X / scale) + zp). */
void rt_dynamic_quantize_linear(uint8_t *y, float *scale, uint8_t *zp, const float *x, int64_t n);
/* The int8 weights of --weights int8 (rt_gemv_pack_i8), quantized
 * symmetrically one output row at a time: rt_scale_i8 is the scale of the
 * K weights w[0], w[inc], ...: s = max |w| / 127 (1 when that is 0 or not
 * finite); rt_quant_i8(w, s) = sat(rint(w / s)) in [-127, 127] (NaN: 0).
 * The compiler rounds a model's weights to s q with them, so that what it
 * multiplies by and the packed copy agree. */
float rt_scale_i8(int64_t K, const float *w, int64_t inc);
int8_t rt_quant_i8(float w, float s);
/* The activations of rt_gemv_packed_i8: 7-bit unsigned, lo = min(0, min a),
 * hi = max(0, max a), sa = (hi - lo) / 127 (1 when 0), zp = sat(rint(-lo /
 * sa)), q = sat(rint(a (1 / sa)) + zp) in [0, 127]; returns sa, NaN (and every q
 * zp) when a holds a NaN or an infinity, so that the product is NaN. */
float rt_quant_act_u7(int64_t K, const float *a, uint8_t *q, int32_t *zp);
/* MatMulInteger: A [m, k] (adt), B [k, n] (bdt), Y [m, n] int32 =
 * sum (A - azp[row]) (B - bzp[col]), exact (nazp 1 or m, nbzp 1 or n). */
void rt_matmul_integer(int32_t *y, const void *a, int adt, const void *azp, int64_t nazp, const void *b, int bdt,
		       const void *bzp, int64_t nbzp, int64_t m, int64_t n, int64_t k);
/* QLinearMatMul with scalar zero points: Y = sat(rint(acc * mult) + yzp),
 * acc the MatMulInteger sum, mult = a_scale * b_scale / y_scale. */
void rt_qlinear_matmul(void *y, int ydt, float mult, const void *yzp, const void *a, int adt, const void *azp,
		       const void *b, int bdt, const void *bzp, int64_t m, int64_t n, int64_t k);
/* ConvInteger: the geometry of rt_conv, Y int32 = sum (X - xzp) (W - wzp[m])
 * over each window, padding contributing nothing (nwzp 1 or m). */
void rt_conv_integer(int32_t *y, const void *x, int xdt, const void *xzp, const void *w, int wdt, const void *wzp,
		     int64_t nwzp, int nsp, const int64_t *xdims, int64_t m, int64_t group, const int64_t *kdims,
		     const int64_t *strides, const int64_t *pads, const int64_t *dil);
/* QLinearConv: Y = sat(rint((acc + bias[m]) * mult[m]) + yzp), acc the
 * ConvInteger sum, bias int32 [m] (NULL: none), mult = x_scale w_scale[m] /
 * y_scale (nmult 1 or m). */
void rt_qlinear_conv(void *y, int ydt, const float *mult, int64_t nmult, const void *yzp, const void *x, int xdt,
		     const void *xzp, const void *w, int wdt, const void *wzp, int64_t nwzp, const int32_t *bias,
		     int nsp, const int64_t *xdims, int64_t m, int64_t group, const int64_t *kdims,
		     const int64_t *strides, const int64_t *pads, const int64_t *dil);
/* MaxPool of uint8 / int8 X (the geometry of rt_pool; padding ignored). */
void rt_maxpool_8(void *y, int dt, const void *x, int nsp, const int64_t *xdims, const int64_t *ysp,
		  const int64_t *k, const int64_t *st, const int64_t *pads, const int64_t *dil);

/* ---- ordinary differential equations (owner: runtime/rt_ode.c) -----------
 * y' = F(t, y) for a state y of n doubles -- the batch of an ODE layer, B rows
 * of S columns, row-major, solved as one system -- from t0 to t1 (either
 * direction) by an explicit Runge-Kutta method of rt_ode_tableaus, the one
 * table of the solvers' coefficients.  All rows share every step, as the
 * reference implementations do for a batch: an adaptive step's error is the
 * root mean square over all n elements.  F is called once per stage with the
 * whole state, and every call counts one function evaluation (NFE).  The
 * state, the slopes and the stage sums are double.  Every function
 * adds to the counts of *st (the caller zeroes them), allocates its own
 * stage buffers (RT_ERR_NOMEM), and returns RT_ERR_ODE_STEPS when an
 * adaptive solve tries max_steps steps without reaching the end, or
 * RT_ERR_NONFINITE when a step's error is NaN or infinite.
 * Legend: n state elements, np parameter elements, s stages, h a step. */

typedef enum rt_ode_method {
	RT_ODE_EULER, RT_ODE_MIDPOINT, RT_ODE_RK4, RT_ODE_DOPRI5, RT_ODE_METHODS
} rt_ode_method;

enum { RT_ODE_MAX_STAGES = 7 };

/* An explicit Runge-Kutta method: stage i's input is
 * Y_i = y + h sum_{j<i} a[i][j] k_j, its slope k_i = F(t + c[i] h, Y_i), the
 * step's result y + h sum_i b[i] k_i, and, adaptive, its error estimate
 * h sum_i e[i] k_i. */
typedef struct rt_ode_tableau {
	const char *name;               /* the solver= word of the .cell format */
	int stages;                     /* s */
	int order;                      /* of the result */
	int adaptive;                   /* e is an embedded error estimate: step control */
	int fsal;                       /* the last stage's input is the result (first same as last:
	                                   its slope is the next step's first) */
	double c[RT_ODE_MAX_STAGES];    /* stage times, as fractions of h */
	double a[RT_ODE_MAX_STAGES][RT_ODE_MAX_STAGES]; /* a[i][j], j < i */
	double b[RT_ODE_MAX_STAGES];    /* the result's weights */
	double e[RT_ODE_MAX_STAGES];    /* adaptive: b minus the embedded lower-order weights */
} rt_ode_tableau;

extern const rt_ode_tableau rt_ode_tableaus[RT_ODE_METHODS];
/* RT_ODE_* of a solver name ("euler", "midpoint", "rk4", "dopri5"), or -1. */
int rt_ode_method_lookup(const char *name);

typedef struct rt_ode_opts {
	int method;                     /* rt_ode_method */
	int64_t steps;                  /* fixed-step methods: equal steps from t0 to t1 (>= 1) */
	double rtol, atol;              /* adaptive: a step passes when the RMS over all n elements of
	                                   err / (atol + rtol max(|y|, |y_new|)) is at most 1 */
	int64_t max_steps;              /* adaptive: steps tried (accepted + rejected) before
	                                   RT_ERR_ODE_STEPS */
} rt_ode_opts;

typedef struct rt_ode_stats {
	int64_t nfe;                    /* evaluations of F (rt_ode_solve), of the adjoint's dynamics
	                                   (rt_ode_adjoint) or of the vector-Jacobian product
	                                   (rt_ode_backprop) */
	int64_t accepted, rejected;     /* steps */
} rt_ode_stats;

/* dy = F(t, y); y, dy [n]. */
typedef void (*rt_ode_fn)(void *ctx, double t, const double *y, double *dy);
/* The vector-Jacobian products of F at (t, y) for a row vector a [n]:
 * ay = a dF/dy [n] (overwritten), gp += a dF/dp [np] (accumulated; the
 * parameters p are whatever the caller lets F depend on). */
typedef void (*rt_ode_vjp)(void *ctx, double t, const double *y, const double *a, double *ay, double *gp);

/* The steps an rt_ode_solve took, for rt_ode_backprop: per accepted step its
 * time, its size and the inputs of the stages that reach its result (all but
 * an FSAL method's last), in segments, one per rt_ode_solve call.  Zero it
 * before the first use; rt_ode_tape_clear forgets the steps and keeps the
 * memory, rt_ode_tape_free releases it. */
typedef struct rt_ode_tape {
	int method;                     /* of the solves recorded */
	int64_t n;                      /* state elements */
	int64_t nsteps, cap;            /* steps recorded, room */
	double *t, *h;                  /* [cap] */
	double *Y;                       /* [cap][stages][n] stage inputs */
	int64_t nseg, capseg;
	int64_t *seg;                   /* [capseg + 1]: segment k is steps [seg[k], seg[k + 1]) */
} rt_ode_tape;
void rt_ode_tape_clear(rt_ode_tape *tp);
void rt_ode_tape_free(rt_ode_tape *tp);

/* Solves y' = F(t, y) from t0 to t1 in place (y [n]: y(t0) in, y(t1) out).
 * tape (may be NULL) gains a segment with the steps taken (RT_ERR_ARG when
 * it holds the steps of another method or size: clear it first). */
int rt_ode_solve(const rt_ode_opts *o, rt_ode_fn f, void *ctx, int64_t n, double *y, double t0, double t1,
		 rt_ode_tape *tape, rt_ode_stats *st);
/* Backpropagation through the steps of tape segment seg (discretise, then
 * optimise: the exact gradient of the computed solution, the step sizes
 * held fixed): a [n] holds dL/dy(t1) and gets dL/dy(t0); gp += dL/dp. */
int rt_ode_backprop(const rt_ode_tape *tp, int64_t seg, rt_ode_vjp vjp, void *ctx, double *a, double *gp,
		    rt_ode_stats *st);
/* The adjoint method: solves the adjoint equations a' = -a dF/dy,
 * g' = -a dF/dp backward from t1 to t0 with the state (y' = F) by the
 * method of o, as one system [y, a, g] of 2n + np elements (g(t1) = 0).
 * y [n]: y(t1) in, the reconstructed y(t0) out; a [n]: dL/dy(t1) in,
 * dL/dy(t0) out; gp [np] += g(t0) = dL/dp. */
int rt_ode_adjoint(const rt_ode_opts *o, rt_ode_fn f, rt_ode_vjp vjp, void *ctx, int64_t n, int64_t np, double *y,
		   double *a, double *gp, double t0, double t1, rt_ode_stats *st);

/* The ODE blocks of the native format (docs/cells.md, "ODE blocks"): x
 * [B, I] sets the initial state, which is integrated from t0 to t1 with
 * f(z) = tanh(W_h z + b_h).  p: the model's parameters, in this order:
 *   node     W_x [H, I], b_x [H], W_h [H, H], b_h [H]             h' = f(h)
 *   hbnode   .. as node, w [1]      h' = m,  m' = -gamma m + f(h),  gamma = sigmoid(w)
 *   ghbnode  .. as hbnode, c [1]    h' = tanh(m),  m' = -gamma m + f(h) - xi h,
 *                                   xi = softplus(c)
 *   anode    W_x, b_x, W_h [S, S], b_h [S]; S = H + P: a' = f(a) on the state
 *            augmented with P zeros, a = [h | 0]
 *   sonode   W_x, b_x, W_v [H, I], b_v [H], W_h [H, 2H], b_h [H]:
 *            h' = v,  v' = f([h | v]),  v(t0) = W_v x + b_v
 * h(t0) = W_x x + b_x, m(t0) = 0.  The whole batch is one system of B rows
 * of H, H + P or 2H columns, so every row takes the same steps.  P is 0
 * but for anode.  y [B, H] = h(t1); stats [3] = NFE, accepted and rejected
 * steps (written on failure too). */
typedef enum rt_ode_model {
	RT_ODE_NODE, RT_ODE_HBNODE, RT_ODE_GHBNODE, RT_ODE_ANODE, RT_ODE_SONODE, RT_ODE_MODELS
} rt_ode_model;
/* RT_ODE_NODE.. of a model name ("node", "hbnode", "ghbnode", "anode", "sonode"), or -1. */
int rt_ode_model_lookup(const char *name);
int rt_ode_block_f32(int model, const rt_ode_opts *o, double t0, double t1, int64_t B, int64_t I, int64_t H,
		     int64_t P, const float *x, const float *const *p, float *y, int64_t *stats);

/* The ODE-RNN hybrids (models node, hbnode, ghbnode) over an irregularly
 * sampled sequence: x [T, B, I], dt
 * [T, B] the time since the row's previous observation.  The state [h | m]
 * starts at 0; at each step t it flows by the model's ODE over each row's
 * own gap -- as dz/ds = dt[t, b] F(z) for s from 0 to 1, one system whose
 * rows share the steps -- then the observation updates
 * h <- tanh(W_x x_t + b_x + W_u h) (W_u [H, H]; m is kept), and
 * y [T, B, H] holds h after each update.  stats: totals over the sequence. */
int rt_ode_rnn_f32(int model, const rt_ode_opts *o, int64_t T, int64_t B, int64_t I, int64_t H, const float *x,
		   const float *dt, const float *W_x, const float *b_x, const float *W_u, const float *W_h,
		   const float *b_h, const float *w, const float *c, float *y, int64_t *stats);

/* ---- training (cellc compile --train) ---- */
/* Y = expm(X), X and Y [n, n] row-major (scaling and squaring, [13/13] Pade, in
 * double); RT_ERR_NOMEM, or RT_ERR_NONFINITE when the Pade denominator is
 * singular (X holds NaN or Inf) */
int rt_expm(float *y, const float *x, int64_t n);
/* The same in double: X = expm(S), [n, n]; 0, or -1 when out of memory or the
 * Pade denominator is singular (cellc computes dtriv's M with it at compile
 * time for inference builds). */
int rt_expm_d(double *X, const double *S, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
