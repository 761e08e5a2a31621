/* onnx_tensor.c: TensorProto -> element type, shape and row-major data.
 *
 * A tensor's elements come from exactly one place: the typed field that
 * ONNX assigns to its element type (float_data, int32_data for every type of
 * 32 bits or less except float, int64_data, double_data, uint64_data for
 * uint32/uint64), raw_data (little-endian, exactly numel * elemsize bytes),
 * or an external file (data_location EXTERNAL; keys location, offset, length,
 * checksum).  External paths are confined to the model's directory: they must
 * be relative, have no ".." component, and resolve (symbolic links included)
 * to a regular file inside it.  Every size is checked against the bytes that
 * are actually there before anything is allocated, so a hostile file cannot
 * make us allocate more than it holds.
 *
 * Also here: reading whole files, the pre-unpack wire check,
 * onnx_read_tensor_file (the test-data reader behind `cellc verify`) and its
 * converse onnx_tensor_pack (the data verify writes for its oracle).
 */
#define _XOPEN_SOURCE 700  /* realpath, fseeko */
#include "onnx_priv.h"
#include "util.h"
#include "cellrt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

static const char *const dtype_names[] = {
	"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
	"STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
	"COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
	"FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
};

const char *onnx_dtype_name(int t)
{
	if (t >= 0 && (size_t)t < COUNTOF(dtype_names))
		return dtype_names[t];
	return "an unknown element type";
}

int onnx_dtype_supported(int t)
{
	return t > 0 && t < DT_COUNT_ && t != DT_STRING && ir_dtype_size((ir_dtype)t) > 0;
}

/* ---- files ---- */

int onnx_read_file(const char *path, size_t limit, unsigned char **buf, size_t *len,
		   char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	*buf = NULL;
	*len = 0;
	if (!f) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		fclose(f);
		return -1;
	}
	if ((uint64_t)st.st_size > limit) {
		snprintf(err, errlen, "file of %lld bytes is larger than the %zu bytes allowed",
			 (long long)st.st_size, limit);
		fclose(f);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	unsigned char *p = malloc(n ? n : 1);
	if (!p)
		arena_oom(NULL, n, "reading a file");
	if (fread(p, 1, n, f) != n) {
		snprintf(err, errlen, "read error: %s", ferror(f) ? strerror(errno) : "file shrank");
		free(p);
		fclose(f);
		return -1;
	}
	fclose(f);
	*buf = p;
	*len = n;
	return 0;
}

const char *onnx_dirname(arena *A, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return arena_strndup(A, path, (size_t)(slash - path));
}

/* ---- the wire check ---- */

enum { WIRE_MAX_DEPTH = 100 };

static int get_varint(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; shift < 64 && *i < n; shift += 7) {
		unsigned char b = p[(*i)++];
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/* Walks one message.  Malformed bytes stop the walk quietly: protobuf-c
 * reports those itself.  *mem accumulates an upper bound of what unpacking
 * allocates.  Returns -1 only when nesting is too deep. */
static int wire_walk(const unsigned char *p, size_t n, const ProtobufCMessageDescriptor *d,
		     int depth, uint64_t *mem)
{
	if (depth > WIRE_MAX_DEPTH)
		return -1;
	*mem += d->sizeof_message;
	size_t i = 0;
	while (i < n) {
		uint64_t key, len;
		if (get_varint(p, n, &i, &key) != 0)
			return 0;
		const ProtobufCFieldDescriptor *f =
			key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
		if (f && f->label == PROTOBUF_C_LABEL_REPEATED)
			*mem += 16;     /* one more array slot */
		switch (key & 7) {
		case 0:
			if (get_varint(p, n, &i, &len) != 0)
				return 0;
			break;
		case 1:
			if (n - i < 8)
				return 0;
			i += 8;
			break;
		case 5:
			if (n - i < 4)
				return 0;
			i += 4;
			break;
		case 2:
			if (get_varint(p, n, &i, &len) != 0 || len > n - i)
				return 0;
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
				if (wire_walk(p + i, (size_t)len, f->descriptor, depth + 1, mem) != 0)
					return -1;
			} else {
				/* bytes/strings are copied; packed numbers expand to at
				 * most 8 bytes per input byte */
				*mem += f && f->label == PROTOBUF_C_LABEL_REPEATED &&
						f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES
					? 8 * len : len + 1;
			}
			i += (size_t)len;
			break;
		default:
			return 0;
		}
	}
	return 0;
}

int onnx_wire_check(const unsigned char *buf, size_t len, const ProtobufCMessageDescriptor *d,
		    char *err, size_t errlen)
{
	uint64_t mem = 0;
	if (wire_walk(buf, len, d, 0, &mem) != 0) {
		snprintf(err, errlen, "messages nested more than %d levels deep", WIRE_MAX_DEPTH);
		return -1;
	}
	/* Real models unpack to a few times their size; a file that would need
	 * much more is made of empty messages meant to exhaust memory. */
	if (mem > 8 * (uint64_t)len + ((uint64_t)256 << 20)) {
		snprintf(err, errlen, "unpacking would need %llu bytes for a %zu-byte file",
			 (unsigned long long)mem, len);
		return -1;
	}
	return 0;
}

/* ---- tensor data ---- */

static void to_host_order(void *data, size_t elsize, int64_t numel)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char *p = data;
	for (int64_t k = 0; k < numel; k++, p += elsize)
		for (size_t a = 0, b = elsize - 1; a < b; a++, b--) {
			unsigned char t = p[a];
			p[a] = p[b];
			p[b] = t;
		}
#else
	(void)data, (void)elsize, (void)numel;
#endif
}

/* Parses a non-negative decimal number (external data offset/length). */
static int parse_size(const char *s, uint64_t *v)
{
	uint64_t r = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || r > (UINT64_MAX - 9) / 10)
			return -1;
		r = r * 10 + (uint64_t)(*s - '0');
	}
	*v = r;
	return 0;
}

/* The location must stay inside dir: relative, no "..", and after resolving
 * links still under dir. */
static int external_path(const char *dir, const char *loc, char **resolved, char *err, size_t errlen)
{
	if (!loc || !*loc) {
		snprintf(err, errlen, "external data has no location");
		return -1;
	}
	if (loc[0] == '/') {
		snprintf(err, errlen, "external data path '%s' is absolute; it must be relative to the model's directory", loc);
		return -1;
	}
	for (const char *c = loc; *c;) {
		size_t k = strcspn(c, "/");
		if (k == 2 && c[0] == '.' && c[1] == '.') {
			snprintf(err, errlen, "external data path '%s' has a '..' component; it must stay inside the model's directory", loc);
			return -1;
		}
		c += k;
		while (*c == '/')
			c++;
	}
	size_t n = strlen(dir) + strlen(loc) + 2;
	char *joined = malloc(n);
	if (!joined)
		arena_oom(NULL, n, "a path");
	snprintf(joined, n, "%s/%s", dir, loc);
	char *rdir = realpath(dir, NULL);
	char *rfile = realpath(joined, NULL);
	int e = errno;
	free(joined);
	int ok = 0;
	if (!rdir) {
		snprintf(err, errlen, "cannot resolve the model's directory '%s'", dir);
	} else if (!rfile) {
		snprintf(err, errlen, "cannot open external data file '%s': %s", loc, strerror(e));
	} else {
		size_t k = strlen(rdir);
		if (strcmp(rdir, "/") == 0)
			k = 0;
		if (strcmp(rfile, rdir) == 0)
			snprintf(err, errlen, "external data location '%s' is the model's directory, not a file", loc);
		else if (strncmp(rfile, rdir, k) != 0 || rfile[k] != '/')
			snprintf(err, errlen, "external data file '%s' resolves outside the model's directory", loc);
		else
			ok = 1;
	}
	free(rdir);
	if (!ok) {
		free(rfile);
		return -1;
	}
	*resolved = rfile;
	return 0;
}

static int read_external(const char *dir, const Onnx__TensorProto *t, void *dst, size_t want,
			 char *err, size_t errlen)
{
	const char *loc = NULL, *off_s = NULL, *len_s = NULL;
	for (size_t k = 0; k < t->n_external_data; k++) {
		const Onnx__StringStringEntryProto *e = t->external_data[k];
		const char *key = e->key ? e->key : "";
		if (strcmp(key, "location") == 0)
			loc = e->value;
		else if (strcmp(key, "offset") == 0)
			off_s = e->value;
		else if (strcmp(key, "length") == 0)
			len_s = e->value;
		/* checksum and keys of later ONNX versions do not affect the bytes */
	}
	uint64_t off = 0, len = 0;
	if (off_s && parse_size(off_s, &off) != 0) {
		snprintf(err, errlen, "external data offset '%s' is not a non-negative integer", off_s);
		return -1;
	}
	if (len_s && parse_size(len_s, &len) != 0) {
		snprintf(err, errlen, "external data length '%s' is not a non-negative integer", len_s);
		return -1;
	}
	char *path;
	if (external_path(dir, loc, &path, err, errlen) != 0)
		return -1;
	FILE *f = fopen(path, "rb");
	free(path);
	struct stat st;
	if (!f) {
		snprintf(err, errlen, "cannot open external data file '%s': %s", loc, strerror(errno));
		return -1;
	}
	int rc = -1;
	uint64_t size;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "external data file '%s' is not a regular file", loc);
		goto out;
	}
	size = (uint64_t)st.st_size;
	if (!len_s)
		len = off <= size ? size - off : 0;
	if (off > size || len > size - off) {
		snprintf(err, errlen, "external data [%llu, %llu + %llu) lies outside '%s' (%llu bytes)",
			 (unsigned long long)off, (unsigned long long)off, (unsigned long long)len, loc,
			 (unsigned long long)size);
		goto out;
	}
	if (len != want) {
		snprintf(err, errlen, "external data in '%s' has %llu bytes; the dims and element type need %zu",
			 loc, (unsigned long long)len, want);
		goto out;
	}
	if (off > (uint64_t)LLONG_MAX || fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(dst, 1, want, f) != want) {
		snprintf(err, errlen, "cannot read external data file '%s'", loc);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	return rc;
}

/* Which typed field holds elements of type dt, and how many values it has. */
typedef enum { F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_NFIELDS } typed_field;

static const char *const field_names[F_NFIELDS] = {
	"float_data", "int32_data", "int64_data", "double_data", "uint64_data",
};

static typed_field field_of(ir_dtype dt)
{
	switch (dt) {
	case DT_F32: return F_FLOAT;
	case DT_I64: return F_INT64;
	case DT_F64: return F_DOUBLE;
	case DT_U32: case DT_U64: return F_UINT64;
	default: return F_INT32;   /* i32 i16 i8 u16 u8 bool */
	}
}

static size_t field_count(const Onnx__TensorProto *t, typed_field f)
{
	switch (f) {
	case F_FLOAT: return t->n_float_data;
	case F_INT32: return t->n_int32_data;
	case F_INT64: return t->n_int64_data;
	case F_DOUBLE: return t->n_double_data;
	case F_UINT64: return t->n_uint64_data;
	default: UNREACHABLE();
	}
}

/* Copies the typed field into dst, narrowing int32_data / uint64_data to the
 * element size with a range check (out-of-range values mean a corrupt file). */
static int copy_typed(const Onnx__TensorProto *t, ir_dtype dt, void *dst, int64_t numel,
		      char *err, size_t errlen)
{
	int64_t lo = 0, hi = 0;
	switch (dt) {
	case DT_F32: memcpy(dst, t->float_data, (size_t)numel * 4); return 0;
	case DT_F64: memcpy(dst, t->double_data, (size_t)numel * 8); return 0;
	case DT_I64: memcpy(dst, t->int64_data, (size_t)numel * 8); return 0;
	case DT_I32: memcpy(dst, t->int32_data, (size_t)numel * 4); return 0;
	case DT_U64: memcpy(dst, t->uint64_data, (size_t)numel * 8); return 0;
	case DT_U32:
		for (int64_t k = 0; k < numel; k++) {
			if (t->uint64_data[k] > UINT32_MAX) {
				snprintf(err, errlen, "uint64_data[%lld] = %llu does not fit UINT32", (long long)k,
					 (unsigned long long)t->uint64_data[k]);
				return -1;
			}
			((uint32_t *)dst)[k] = (uint32_t)t->uint64_data[k];
		}
		return 0;
	case DT_I8: lo = INT8_MIN; hi = INT8_MAX; break;
	case DT_U8: lo = 0; hi = UINT8_MAX; break;
	case DT_I16: lo = INT16_MIN; hi = INT16_MAX; break;
	case DT_U16: lo = 0; hi = UINT16_MAX; break;
	case DT_BOOL: lo = 0; hi = 1; break;
	default: UNREACHABLE();
	}
	for (int64_t k = 0; k < numel; k++) {
		int32_t v = t->int32_data[k];
		if (v < lo || v > hi) {
			snprintf(err, errlen, "int32_data[%lld] = %d does not fit %s", (long long)k, (int)v,
				 onnx_dtype_name(dt));
			return -1;
		}
		switch (dt) {
		case DT_I8: ((int8_t *)dst)[k] = (int8_t)v; break;
		case DT_I16: ((int16_t *)dst)[k] = (int16_t)v; break;
		case DT_U16: ((uint16_t *)dst)[k] = (uint16_t)v; break;
		default: ((uint8_t *)dst)[k] = (uint8_t)v; break;
		}
	}
	return 0;
}

/* The dims into out->shape and the element count into *numel; -1 with
 * err filled if a dim is negative or there are more than 2^48 elements. */
static int decode_dims(const Onnx__TensorProto *t, onnx_tensor *out, int64_t *numel, char *err, size_t errlen)
{
	/* Element counts are bounded by the bytes the data occupies, so capping
	 * numel well below overflow loses nothing.  A zero dim makes any other
	 * dim harmless. */
	const int64_t cap = (int64_t)1 << 48;
	int zero = 0, huge = 0;
	*numel = 1;
	out->shape.rank = (int)t->n_dims;
	for (size_t k = 0; k < t->n_dims; k++) {
		int64_t d = t->dims[k];
		if (d < 0) {
			snprintf(err, errlen, "has negative dimension %lld", (long long)d);
			return -1;
		}
		out->shape.d[k] = ir_dim_const(d);
		if (d == 0)
			zero = 1;
		else if (d > cap / *numel)
			huge = 1;
		else
			*numel *= d;
	}
	if (zero)
		*numel = 0;
	else if (huge) {
		snprintf(err, errlen, "has more than 2^48 elements");
		return -1;
	}
	return 0;
}

/* Whether the values are in one place: the typed field of dt (want),
 * raw_data or external data, and nowhere else; -1 with err filled if not. */
static int check_storage(const Onnx__TensorProto *t, typed_field want, int external, char *err, size_t errlen)
{
	if (t->n_string_data) {
		snprintf(err, errlen, "of type %s has string_data", onnx_dtype_name(t->data_type));
		return -1;
	}
	for (int f = 0; f < F_NFIELDS; f++) {
		size_t cnt = field_count(t, (typed_field)f);
		if (cnt && (f != (int)want || external || t->has_raw_data)) {
			snprintf(err, errlen, "of type %s has values in %s%s", onnx_dtype_name(t->data_type), field_names[f],
				 external ? " besides external data"
				 : t->has_raw_data ? " besides raw_data"
				 : "; they belong in raw_data or the type's own field");
			return -1;
		}
	}
	if (external && t->has_raw_data) {
		snprintf(err, errlen, "has both raw_data and external data");
		return -1;
	}
	if (!external && t->n_external_data) {
		snprintf(err, errlen, "has external_data entries but data_location is not EXTERNAL");
		return -1;
	}
	return 0;
}

/* The numel elements of type dt (bytes in all) into out->data, from where
 * check_storage found them, in host byte order; -1 with err filled. */
static int read_values(arena *A, const char *dir, const Onnx__TensorProto *t, ir_dtype dt, int64_t numel,
		       size_t bytes, int external, onnx_tensor *out, char *err, size_t errlen)
{
	size_t elsize = ir_dtype_size(dt);
	typed_field want = field_of(dt);
	if (external) {
		out->data = arena_alloc(A, bytes ? bytes : 1);
		if (read_external(dir, t, out->data, bytes, err, errlen) != 0)
			return -1;
		to_host_order(out->data, elsize, numel);
	} else if (t->has_raw_data) {
		if (t->raw_data.len != bytes) {
			snprintf(err, errlen, "has %zu bytes of raw_data; %lld elements of %s need %zu",
				 t->raw_data.len, (long long)numel, onnx_dtype_name(t->data_type), bytes);
			return -1;
		}
		out->data = arena_alloc(A, bytes ? bytes : 1);
		if (bytes)
			memcpy(out->data, t->raw_data.data, bytes);
		to_host_order(out->data, elsize, numel);
		if (dt == DT_BOOL)
			for (int64_t k = 0; k < numel; k++)
				((uint8_t *)out->data)[k] = ((uint8_t *)out->data)[k] != 0;
	} else {
		size_t cnt = field_count(t, want);
		if (cnt != (size_t)numel) {
			snprintf(err, errlen, "has %zu values in %s; its dims need %lld", cnt, field_names[want],
				 (long long)numel);
			return -1;
		}
		out->data = arena_alloc(A, bytes ? bytes : 1);
		if (numel && copy_typed(t, dt, out->data, numel, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* FLOAT16 or BFLOAT16 encodings (narrow) in out->data widened to float32. */
static void widen(arena *A, ir_dtype narrow, int64_t numel, onnx_tensor *out)
{
	float *f = arena_alloc(A, (size_t)numel * 4 + 1);
	for (int64_t k = 0; k < numel; k++) {
		uint16_t h = ((const uint16_t *)out->data)[k];
		f[k] = narrow == DT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
	}
	out->data = f;
	out->dtype = DT_F32;
	out->narrow = narrow;
}

int onnx_tensor_decode(arena *A, const char *dir, const Onnx__TensorProto *t,
		       onnx_tensor *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (!t->has_data_type || t->data_type == 0) {
		snprintf(err, errlen, "has no element type");
		return -1;
	}
	/* FLOAT16 and BFLOAT16 are read as their 16-bit encodings (stored like
	 * UINT16) and widened to float32 at the end */
	ir_dtype narrow = t->data_type == DT_F16 || t->data_type == DT_BF16 ? (ir_dtype)t->data_type : DT_UNDEF;
	if (!narrow && !onnx_dtype_supported(t->data_type)) {
		snprintf(err, errlen, "has element type %s, which cellc does not support",
			 onnx_dtype_name(t->data_type));
		return -1;
	}
	ir_dtype dt = narrow ? DT_U16 : (ir_dtype)t->data_type;
	size_t elsize = ir_dtype_size(dt);
	if (t->segment) {
		snprintf(err, errlen, "is a segment of a larger tensor, which cellc does not support");
		return -1;
	}
	if (t->n_dims > IR_MAX_RANK) {
		snprintf(err, errlen, "has rank %zu; cellc supports at most %d", t->n_dims, (int)IR_MAX_RANK);
		return -1;
	}
	int64_t numel;
	if (decode_dims(t, out, &numel, err, errlen) != 0)
		return -1;
	size_t bytes = (size_t)numel * elsize;
	out->dtype = dt;
	out->numel = numel;
	if (!arena_fits(A, bytes + 16)) {
		snprintf(err, errlen, "needs %zu bytes, more than the memory budget of %zu MiB leaves "
			 "(--max-memory raises it)", bytes, arena_budget >> 20);
		return -1;
	}
	int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	if (check_storage(t, field_of(dt), external, err, errlen) != 0 ||
	    read_values(A, dir, t, dt, numel, bytes, external, out, err, errlen) != 0)
		return -1;
	if (narrow)
		widen(A, narrow, numel, out);
	return 0;
}

/* ---- test data files ---- */

enum { TENSOR_FILE_LIMIT = 2147483647 };   /* protobuf's own 2 GiB limit */

ir_value *onnx_read_tensor_file(ir_graph *g, diag *D, const char *path)
{
	char err[400];
	unsigned char *buf;
	size_t len;
	if (onnx_read_file(path, TENSOR_FILE_LIMIT, &buf, &len, err, sizeof err) != 0) {
		diag_error(D, "%s: %s", path, err);
		return NULL;
	}
	if (onnx_wire_check(buf, len, &onnx__tensor_proto__descriptor, err, sizeof err) != 0) {
		diag_error(D, "%s: not a valid TensorProto file: %s", path, err);
		free(buf);
		return NULL;
	}
	Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!t) {
		diag_error(D, "%s: not a valid TensorProto file: protobuf parse failed (truncated or not a protobuf)", path);
		return NULL;
	}
	onnx_tensor ot;
	ir_value *v = NULL;
	const char *name = t->name && *t->name ? t->name : NULL;
	if (onnx_tensor_decode(g->A, onnx_dirname(g->A, path), t, &ot, err, sizeof err) != 0) {
		diag_error(D, "%s: tensor%s%s%s %s", path, name ? " '" : "", name ? name : "", name ? "'" : "", err);
	} else {
		if (!name) {
			const char *base = strrchr(path, '/');
			name = base ? base + 1 : path;
		}
		v = ir_value_new(g, name, VAL_CONST, ot.dtype);
		v->shape = ot.shape;
		v->data = ot.data;
		v->narrow = ot.narrow;
	}
	onnx__tensor_proto__free_unpacked(t, NULL);
	return v;
}

uint8_t *onnx_tensor_pack(arena *A, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
			  size_t nbytes, size_t *len)
{
	Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
	t.n_dims = (size_t)rank;
	t.dims = (int64_t *)dims;
	t.has_data_type = 1;
	t.data_type = dtype;
	t.name = (char *)name;
	t.has_raw_data = 1;
	t.raw_data.len = nbytes;
	t.raw_data.data = (uint8_t *)data;
	*len = onnx__tensor_proto__get_packed_size(&t);
	uint8_t *buf = arena_alloc(A, *len + 1);
	onnx__tensor_proto__pack(&t, buf);
	return buf;
}
