/* rt_tensorfile.c: reading and writing cellc tensor files (cellrt.h).
 *
 * Tensor files hold the weights of an emitted model and the inputs and
 * outputs `cellc verify` passes to its driver.  A file comes from outside the
 * program, so rt_tf_open trusts nothing in it: every header field, table
 * entry and offset is checked with overflow-safe arithmetic, and the checksum
 * is verified, before any tensor is handed out.  Integers are little-endian
 * in the file and decoded byte by byte, so the reader never does an unaligned
 * or out-of-bounds load whatever the file says.
 *
 * Layout (offsets in bytes):
 *   0   magic "CELLTNSR"        8   u32 version (1)      12  u32 count
 *   16  u64 table offset (64)   24  u64 data offset      32  u64 file size
 *   40  u64 FNV-1a-64 of [64, file size)                 48  16 bytes zero
 *   64  table: count entries of 256 bytes
 *         0 name[160] NUL-terminated, 160 u32 dtype, 164 u32 rank,
 *         168 i64 dims[8], 232 u64 offset, 240 u64 nbytes, 248 8 bytes zero
 *   data offset (64 + 256 count): tensors at 64-byte aligned offsets.
 *
 * rt_tf_write builds the file in a temporary beside the target, fsyncs it and
 * renames it into place, so a reader never sees a half-written file.
 */
#define _POSIX_C_SOURCE 200809L

#include "cellrt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	TF_HEADER = 64,
	TF_ENTRY = 256,
	TF_ALIGN = 64,
	TF_VERSION = 1,
	/* field offsets inside a table entry */
	TE_DTYPE = 160, TE_RANK = 164, TE_DIMS = 168, TE_OFFSET = 232, TE_NBYTES = 240,
};

static const char tf_magic[8] = {'C', 'E', 'L', 'L', 'T', 'N', 'S', 'R'};

/* ---- little-endian fields ---- */

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* ---- FNV-1a-64, fed in pieces ---- */

#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

size_t rt_dtype_size(int dtype)
{
	switch (dtype) {
	case 1: return 4;   /* float */
	case 2: return 1;   /* uint8 */
	case 3: return 1;   /* int8 */
	case 4: return 2;   /* uint16 */
	case 5: return 2;   /* int16 */
	case 6: return 4;   /* int32 */
	case 7: return 8;   /* int64 */
	case 9: return 1;   /* bool, one byte per element */
	case 10: return 2;  /* float16 */
	case 11: return 8;  /* double */
	case 12: return 4;  /* uint32 */
	case 13: return 8;  /* uint64 */
	case 16: return 2;  /* bfloat16 */
	default: return 0;  /* string, complex, undefined, unknown */
	}
}

/* numel * dtype size of a shape, or 0 with *ok = 0 when a dim is negative or
 * the product overflows size_t. */
static size_t tensor_bytes(int dtype, int rank, const int64_t *dims, int *ok)
{
	size_t n = rt_dtype_size(dtype);
	*ok = n != 0 && rank >= 0 && rank <= RT_TF_MAXRANK;
	if (!*ok)
		return 0;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0 || (uint64_t)dims[i] > SIZE_MAX) {
			*ok = 0;
			return 0;
		}
		size_t d = (size_t)dims[i];
		if (d != 0 && n > SIZE_MAX / d) {
			*ok = 0;
			return 0;
		}
		n *= d;
	}
	return n;
}

static size_t align_up(size_t n) { return (n + (TF_ALIGN - 1)) & ~(size_t)(TF_ALIGN - 1); }

/* ---- reading ---- */

/* Checks the image and fills tf's table; tf->mem is set by the caller.
 * The table is allocated, or the caller's tab[cap] when tab is given
 * (rt_tf_open_view). */
static int parse(rt_tensorfile *tf, const unsigned char *m, size_t size, rt_tensor *tab, int cap)
{
	if (size < TF_HEADER)
		return memcmp(m, tf_magic, size < 8 ? size : 8) == 0 ? RT_ERR_TRUNCATED : RT_ERR_FORMAT;
	if (memcmp(m, tf_magic, 8) != 0 || get_u32(m + 8) != TF_VERSION)
		return RT_ERR_FORMAT;
	uint32_t count = get_u32(m + 12);
	uint64_t table = get_u64(m + 16), data = get_u64(m + 24), fsize = get_u64(m + 32);
	if (table != TF_HEADER)
		return RT_ERR_FORMAT;
	for (int i = 48; i < TF_HEADER; i++)
		if (m[i])
			return RT_ERR_FORMAT;
	if (fsize != size)
		return fsize > size ? RT_ERR_TRUNCATED : RT_ERR_FORMAT;
	/* count * 256 cannot overflow when compared by division first. */
	/* The stated size matched, so a table that does not fit is garbage.
	 * Dividing first keeps count * 256 from overflowing. */
	if (count > (size - TF_HEADER) / TF_ENTRY || count > (uint32_t)INT32_MAX)
		return RT_ERR_FORMAT;
	size_t table_end = TF_HEADER + (size_t)count * TF_ENTRY;
	if (data != table_end)
		return RT_ERR_FORMAT;
	if (fnv1a(FNV_BASIS, m + TF_HEADER, size - TF_HEADER) != get_u64(m + 40))
		return RT_ERR_CHECKSUM;

	tf->count = (int)count;
	if (tab && count > (uint32_t)(cap > 0 ? cap : 0))
		return RT_ERR_MISMATCH;     /* more tensors than the caller expects */
	tf->t = !count ? NULL : tab ? tab : calloc(count, sizeof *tf->t);
	if (count && !tf->t)
		return RT_ERR_NOMEM;
	for (uint32_t k = 0; k < count; k++) {
		const unsigned char *e = m + TF_HEADER + (size_t)k * TF_ENTRY;
		rt_tensor *t = &tf->t[k];
		if (!memchr(e, 0, RT_TF_NAME) || e[0] == 0)
			return RT_ERR_FORMAT;
		for (int i = TE_NBYTES + 8; i < TF_ENTRY; i++)
			if (e[i])
				return RT_ERR_FORMAT;
		uint32_t dtype = get_u32(e + TE_DTYPE), rank = get_u32(e + TE_RANK);
		if (dtype > 255 || rt_dtype_size((int)dtype) == 0 || rank > RT_TF_MAXRANK)
			return RT_ERR_FORMAT;
		t->name = (const char *)e;
		t->dtype = (int)dtype;
		t->rank = (int)rank;
		for (uint32_t i = 0; i < RT_TF_MAXRANK; i++) {
			uint64_t d = get_u64(e + TE_DIMS + 8 * i);
			if (i >= rank ? d != 0 : d > (uint64_t)INT64_MAX)
				return RT_ERR_FORMAT;
			t->dims[i] = (int64_t)d;
		}
		int ok;
		size_t want = tensor_bytes(t->dtype, t->rank, t->dims, &ok);
		uint64_t off = get_u64(e + TE_OFFSET), nbytes = get_u64(e + TE_NBYTES);
		if (!ok || nbytes != want)
			return RT_ERR_FORMAT;
		if (off % TF_ALIGN != 0 || off < table_end)
			return RT_ERR_FORMAT;
		if (off > size || nbytes > size - off)
			return RT_ERR_TRUNCATED;
		t->data = m + off;
		t->nbytes = (size_t)nbytes;
		for (uint32_t j = 0; j < k; j++)
			if (strcmp(tf->t[j].name, t->name) == 0)
				return RT_ERR_FORMAT;   /* names must be unique: lookups by name */
	}
	return RT_OK;
}

static void tf_reset(rt_tensorfile *tf)
{
	free(tf->t);
	memset(tf, 0, sizeof *tf);
}

int rt_tf_open_mem(rt_tensorfile *tf, const void *mem, size_t size)
{
	if (!tf)
		return RT_ERR_ARG;
	memset(tf, 0, sizeof *tf);
	if (!mem || (uintptr_t)mem % TF_ALIGN != 0)
		return RT_ERR_ARG;
	int st = parse(tf, mem, size, NULL, 0);
	if (st != RT_OK) {
		tf_reset(tf);
		return st;
	}
	tf->size = size;    /* mem stays NULL: the image belongs to the caller */
	return RT_OK;
}

/* tf from mem[size], an image of 64-byte aligned memory that tf then owns
 * (freed here on failure) */
static int open_owned(rt_tensorfile *tf, void *mem, size_t size)
{
	int rc = parse(tf, mem, size, NULL, 0);
	if (rc != RT_OK) {
		tf_reset(tf);
		free(mem);
		return rc;
	}
	tf->mem = mem;
	tf->size = size;
	return RT_OK;
}

int rt_tf_open(rt_tensorfile *tf, const char *path)
{
	if (!tf)
		return RT_ERR_ARG;
	memset(tf, 0, sizeof *tf);
	if (!path)
		return RT_ERR_ARG;
	FILE *f = fopen(path, "rb");
	if (!f)
		return RT_ERR_IO;
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > SIZE_MAX - TF_ALIGN) {
		fclose(f);
		return RT_ERR_IO;
	}
	size_t size = (size_t)st.st_size;
	void *mem = aligned_alloc(TF_ALIGN, align_up(size ? size : 1));
	if (!mem) {
		fclose(f);
		return RT_ERR_NOMEM;
	}
	size_t got = fread(mem, 1, size, f);
	int err = ferror(f);
	/* One more byte means the file grew after fstat: treat as unreadable. */
	int grew = got == size && fgetc(f) != EOF;
	fclose(f);
	if (err || grew || got != size) {
		free(mem);
		return err || grew ? RT_ERR_IO : RT_ERR_TRUNCATED;
	}
	return open_owned(tf, mem, size);
}

int rt_tf_open_copy(rt_tensorfile *tf, const void *image, size_t size)
{
	if (!tf)
		return RT_ERR_ARG;
	memset(tf, 0, sizeof *tf);
	if (!image || size > SIZE_MAX - TF_ALIGN)
		return RT_ERR_ARG;
	void *mem = aligned_alloc(TF_ALIGN, align_up(size ? size : 1));
	if (!mem)
		return RT_ERR_NOMEM;
	memcpy(mem, image, size);
	return open_owned(tf, mem, size);
}

void rt_tf_close(rt_tensorfile *tf)
{
	if (!tf)
		return;
	free(tf->mem);
	tf_reset(tf);
}

/* ---- without allocation (emitted code built with --no-malloc) ---- */

int rt_tf_open_view(rt_tensorfile *tf, const void *mem, size_t size, rt_tensor *table, int cap)
{
	if (!tf)
		return RT_ERR_ARG;
	memset(tf, 0, sizeof *tf);
	if (!mem || !table || (uintptr_t)mem % TF_ALIGN != 0)
		return RT_ERR_ARG;
	int st = parse(tf, mem, size, table, cap);
	if (st != RT_OK) {
		memset(tf, 0, sizeof *tf);  /* the table is the caller's: nothing to free */
		return st;
	}
	tf->size = size;
	return RT_OK;
}

int rt_tf_read_into(const char *path, void *buf, size_t cap, size_t *size)
{
	if (!path || !buf || !size)
		return RT_ERR_ARG;
	*size = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return RT_ERR_IO;
	setvbuf(f, NULL, _IONBF, 0);    /* no stdio buffer: the data goes straight to buf */
	size_t got = fread(buf, 1, cap, f);
	int err = ferror(f);
	int more = !err && got == cap && fgetc(f) != EOF;
	fclose(f);
	if (err)
		return RT_ERR_IO;
	if (more)
		return RT_ERR_MISMATCH;     /* larger than the model's weights file */
	*size = got;
	return RT_OK;
}

const rt_tensor *rt_tf_find(const rt_tensorfile *tf, const char *name)
{
	if (!tf || !name)
		return NULL;
	for (int i = 0; i < tf->count; i++)
		if (strcmp(tf->t[i].name, name) == 0)
			return &tf->t[i];
	return NULL;
}

int rt_tf_expect(const rt_tensorfile *tf, const char *name, int dtype, int rank,
		 const int64_t *dims, const void **data)
{
	if (!tf || !name || rank < 0 || rank > RT_TF_MAXRANK || (rank && !dims))
		return RT_ERR_ARG;
	const rt_tensor *t = rt_tf_find(tf, name);
	if (!t || t->dtype != dtype || t->rank != rank)
		return RT_ERR_MISMATCH;
	for (int i = 0; i < rank; i++)
		if (t->dims[i] != dims[i])
			return RT_ERR_MISMATCH;
	if (data)
		*data = t->data;
	return RT_OK;
}

/* ---- writing ---- */

static int write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Validates the tensors and lays out the file: header and table (checksum
 * still zero) in `head`, allocated here; the total size in *file_size. */
static int layout(int count, const rt_tensor *t, unsigned char **head, size_t *head_size,
		  size_t *file_size)
{
	if (count < 0 || (count && !t) || (size_t)count > (SIZE_MAX - TF_HEADER) / TF_ENTRY ||
	    (uint64_t)count > UINT32_MAX)
		return RT_ERR_ARG;
	size_t hs = TF_HEADER + (size_t)count * TF_ENTRY;
	unsigned char *h = calloc(1, hs);
	if (!h)
		return RT_ERR_NOMEM;
	size_t pos = hs;    /* already 64-aligned: 64 + 256 count */
	for (int k = 0; k < count; k++) {
		const rt_tensor *x = &t[k];
		size_t len = x->name ? strlen(x->name) : 0;
		int ok;
		size_t want = tensor_bytes(x->dtype, x->rank, x->dims, &ok);
		if (len == 0 || len >= RT_TF_NAME || !ok || want != x->nbytes || (want && !x->data)) {
			free(h);
			return RT_ERR_ARG;
		}
		for (int j = 0; j < k; j++)
			if (strcmp(t[j].name, x->name) == 0) {
				free(h);
				return RT_ERR_ARG;
			}
		if (want > SIZE_MAX - TF_ALIGN || pos > SIZE_MAX - TF_ALIGN - want) {
			free(h);
			return RT_ERR_ARG;
		}
		pos = align_up(pos);
		unsigned char *e = h + TF_HEADER + (size_t)k * TF_ENTRY;
		memcpy(e, x->name, len);
		put_u32(e + TE_DTYPE, (uint32_t)x->dtype);
		put_u32(e + TE_RANK, (uint32_t)x->rank);
		for (int i = 0; i < x->rank; i++)
			put_u64(e + TE_DIMS + 8 * i, (uint64_t)x->dims[i]);
		put_u64(e + TE_OFFSET, pos);
		put_u64(e + TE_NBYTES, want);
		pos += want;
	}
	memcpy(h, tf_magic, 8);
	put_u32(h + 8, TF_VERSION);
	put_u32(h + 12, (uint32_t)count);
	put_u64(h + 16, TF_HEADER);
	put_u64(h + 24, hs);
	put_u64(h + 32, pos);
	*head = h;
	*head_size = hs;
	*file_size = pos;
	return RT_OK;
}

static const unsigned char zeros[TF_ALIGN];

/* Streams the data part (with alignment padding) to fd, or only hashes it
 * when fd < 0. */
static int put_data(int fd, int count, const rt_tensor *t, size_t pos, uint64_t *h)
{
	for (int k = 0; k < count; k++) {
		size_t pad = align_up(pos) - pos;
		*h = fnv1a(*h, zeros, pad);
		if (fd >= 0 && write_all(fd, zeros, pad))
			return -1;
		*h = fnv1a(*h, t[k].data, t[k].nbytes);
		if (fd >= 0 && t[k].nbytes && write_all(fd, t[k].data, t[k].nbytes))
			return -1;
		pos += pad + t[k].nbytes;
	}
	return 0;
}

int rt_tf_write(const char *path, int count, const rt_tensor *t)
{
	if (!path || !*path)
		return RT_ERR_ARG;
	unsigned char *head;
	size_t hs, fsize;
	int rc = layout(count, t, &head, &hs, &fsize);
	if (rc != RT_OK)
		return rc;
	uint64_t h = fnv1a(FNV_BASIS, head + TF_HEADER, hs - TF_HEADER);
	put_data(-1, count, t, hs, &h);
	put_u64(head + 40, h);

	size_t plen = strlen(path);
	char *tmp = malloc(plen + sizeof ".tmp.XXXXXX");
	if (!tmp) {
		free(head);
		return RT_ERR_NOMEM;
	}
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
	int fd = mkstemp(tmp);
	if (fd < 0) {
		free(tmp);
		free(head);
		return RT_ERR_IO;
	}
	uint64_t h2 = FNV_BASIS;
	int bad = fchmod(fd, 0644) != 0 || write_all(fd, head, hs) ||
		  put_data(fd, count, t, hs, &h2) || fsync(fd) != 0;
	bad |= close(fd) != 0;
	if (!bad && rename(tmp, path) != 0)
		bad = 1;
	if (bad)
		unlink(tmp);
	free(tmp);
	free(head);
	return bad ? RT_ERR_IO : RT_OK;
}
