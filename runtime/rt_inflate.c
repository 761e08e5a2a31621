/* rt_inflate.c: DEFLATE (RFC 1951) and gzip (RFC 1952) decompression for the
 * data files of the training program (cellrt.h, "training data"), so that
 * Debian's gzipped Fashion-MNIST files need no zlib.
 *
 * The decoder follows the structure of Mark Adler's puff.c: canonical Huffman
 * codes described by counts per length and symbols in code order, decoded a
 * bit at a time (simple, and fast enough for tens of megabytes).  The input
 * comes from outside the program, so nothing in it is trusted: every read is
 * bounds-checked, code lengths must describe a valid code, distances must
 * stay inside the output, and the output can never exceed the caller's limit.
 * A gzip file may hold several members (concatenated `gzip` outputs); each
 * member's CRC-32 and length are checked.
 */
#include "cellrt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAXBITS = 15,           /* longest code */
	MAXLCODES = 286,        /* literal/length codes */
	MAXDCODES = 30,         /* distance codes */
	MAXCODES = MAXLCODES + MAXDCODES,
	FIXLCODES = 288,        /* literal/length codes of the fixed code */
};

typedef struct inf {
	const unsigned char *in;
	size_t inlen, incnt;    /* input bytes, bytes consumed */
	uint32_t bitbuf;        /* bits not yet used, low bits first */
	int bitcnt;
	unsigned char *out;     /* growing output (realloc) */
	size_t outcap, outcnt, max;
	const char *err;        /* first error, NULL while fine */
	int status;             /* its rt_status */
} inf;

static void bad(inf *s, int status, const char *why)
{
	if (!s->err) {
		s->err = why;
		s->status = status;
	}
}

/* need bits from the input, low bit first; 0 after an error (callers check
 * s->err before trusting what they decoded) */
static int bits(inf *s, int need)
{
	uint32_t val = s->bitbuf;
	while (s->bitcnt < need) {
		if (s->incnt == s->inlen) {
			bad(s, RT_ERR_TRUNCATED, "compressed data end unexpectedly (truncated)");
			return 0;
		}
		val |= (uint32_t)s->in[s->incnt++] << s->bitcnt;
		s->bitcnt += 8;
	}
	s->bitbuf = val >> need;
	s->bitcnt -= need;
	return (int)(val & ((1u << need) - 1));
}

static int put(inf *s, const unsigned char *p, size_t n)
{
	if (n == 0)
		return 0;       /* an empty stored block (zlib's sync flush): no out buffer yet */
	if (n > s->max - s->outcnt) {
		bad(s, RT_ERR_FORMAT, "decompressed data exceed the size limit");
		return -1;
	}
	if (s->outcnt + n > s->outcap) {
		size_t cap = s->outcap ? s->outcap : 65536;
		while (cap < s->outcnt + n)
			cap = cap > s->max / 2 ? s->max : cap * 2;
		unsigned char *o = realloc(s->out, cap);
		if (!o) {
			bad(s, RT_ERR_NOMEM, "out of memory");
			return -1;
		}
		s->out = o;
		s->outcap = cap;
	}
	if (p)
		memcpy(s->out + s->outcnt, p, n);
	s->outcnt += n;
	return 0;
}

static int stored(inf *s)
{
	s->bitbuf = 0;          /* the block starts at a byte boundary */
	s->bitcnt = 0;
	if (s->inlen - s->incnt < 4) {
		bad(s, RT_ERR_TRUNCATED, "compressed data end inside a stored block header (truncated)");
		return -1;
	}
	const unsigned char *p = s->in + s->incnt;
	unsigned len = p[0] | (unsigned)p[1] << 8, nlen = p[2] | (unsigned)p[3] << 8;
	if (len != (~nlen & 0xffff)) {
		bad(s, RT_ERR_FORMAT, "stored block length does not match its complement");
		return -1;
	}
	s->incnt += 4;
	if (s->inlen - s->incnt < len) {
		bad(s, RT_ERR_TRUNCATED, "compressed data end inside a stored block (truncated)");
		return -1;
	}
	if (put(s, s->in + s->incnt, len))
		return -1;
	s->incnt += len;
	return 0;
}

typedef struct huff {
	short count[MAXBITS + 1];   /* codes of each length */
	short symbol[FIXLCODES];    /* symbols in canonical order */
} huff;

/* Next symbol of code h, or -1 (with s->err set) */
static int decode(inf *s, const huff *h)
{
	int code = 0, first = 0, index = 0;
	for (int len = 1; len <= MAXBITS; len++) {
		code |= bits(s, 1);
		if (s->err)
			return -1;
		int count = h->count[len];
		if (code - count < first)
			return h->symbol[index + (code - first)];
		index += count;
		first = (first + count) << 1;
		code <<= 1;
	}
	bad(s, RT_ERR_FORMAT, "invalid Huffman code in the compressed data");
	return -1;
}

/* Builds h from code lengths; returns 0 for a complete code, > 0 for an
 * incomplete one, < 0 for an over-subscribed one. */
static int construct(huff *h, const short *length, int n)
{
	short offs[MAXBITS + 1];
	memset(h->count, 0, sizeof h->count);
	for (int i = 0; i < n; i++)
		h->count[length[i]]++;
	if (h->count[0] == n)
		return 0;       /* no codes: complete, but decoding fails */
	int left = 1;
	for (int len = 1; len <= MAXBITS; len++) {
		left <<= 1;
		left -= h->count[len];
		if (left < 0)
			return left;
	}
	offs[1] = 0;
	for (int len = 1; len < MAXBITS; len++)
		offs[len + 1] = (short)(offs[len] + h->count[len]);
	for (int i = 0; i < n; i++)
		if (length[i])
			h->symbol[offs[length[i]]++] = (short)i;
	return left;
}

static const short lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
				35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const short lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
			       3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const short dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
				257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
				8193, 12289, 16385, 24577};
static const short dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
			       7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* The literals, lengths and distances of one block, up to end-of-block. */
static int codes(inf *s, const huff *lencode, const huff *distcode)
{
	for (;;) {
		int sym = decode(s, lencode);
		if (sym < 0)
			return -1;
		if (sym < 256) {
			unsigned char c = (unsigned char)sym;
			if (put(s, &c, 1))
				return -1;
		} else if (sym == 256) {
			return 0;
		} else {
			sym -= 257;
			if (sym >= 29) {
				bad(s, RT_ERR_FORMAT, "invalid length code in the compressed data");
				return -1;
			}
			size_t len = (size_t)lbase[sym] + (size_t)bits(s, lext[sym]);
			int dsym = decode(s, distcode);
			if (dsym < 0)
				return -1;
			if (dsym >= 30) {
				bad(s, RT_ERR_FORMAT, "invalid distance code in the compressed data");
				return -1;
			}
			size_t dist = (size_t)dbase[dsym] + (size_t)bits(s, dext[dsym]);
			if (s->err)
				return -1;
			if (dist > s->outcnt) {
				bad(s, RT_ERR_FORMAT, "a distance in the compressed data reaches before the start");
				return -1;
			}
			size_t at = s->outcnt;
			if (put(s, NULL, len))
				return -1;
			for (size_t i = 0; i < len; i++)    /* may overlap: byte by byte */
				s->out[at + i] = s->out[at + i - dist];
		}
	}
}

static int fixed(inf *s)
{
	/* built per block (a few hundred operations): no global state */
	huff lencode, distcode;
	short lengths[FIXLCODES];
	int i = 0;
	for (; i < 144; i++)
		lengths[i] = 8;
	for (; i < 256; i++)
		lengths[i] = 9;
	for (; i < 280; i++)
		lengths[i] = 7;
	for (; i < FIXLCODES; i++)
		lengths[i] = 8;
	construct(&lencode, lengths, FIXLCODES);
	for (i = 0; i < MAXDCODES; i++)
		lengths[i] = 5;
	construct(&distcode, lengths, MAXDCODES);
	return codes(s, &lencode, &distcode);
}

static int dynamic(inf *s)
{
	static const short order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
	short lengths[MAXCODES];
	huff lencode, distcode;
	int nlen = bits(s, 5) + 257, ndist = bits(s, 5) + 1, ncode = bits(s, 4) + 4;
	if (s->err)
		return -1;
	if (nlen > MAXLCODES || ndist > MAXDCODES) {
		bad(s, RT_ERR_FORMAT, "too many length or distance codes in a dynamic block");
		return -1;
	}
	int index;
	for (index = 0; index < ncode; index++)
		lengths[order[index]] = (short)bits(s, 3);
	for (; index < 19; index++)
		lengths[order[index]] = 0;
	if (s->err)
		return -1;
	if (construct(&lencode, lengths, 19) != 0) {
		bad(s, RT_ERR_FORMAT, "incomplete or over-subscribed code-length code");
		return -1;
	}
	index = 0;
	while (index < nlen + ndist) {
		int sym = decode(s, &lencode);
		if (sym < 0)
			return -1;
		if (sym < 16) {
			lengths[index++] = (short)sym;
			continue;
		}
		short len = 0;
		if (sym == 16) {
			if (index == 0) {
				bad(s, RT_ERR_FORMAT, "a repeat code with no previous length");
				return -1;
			}
			len = lengths[index - 1];
			sym = 3 + bits(s, 2);
		} else if (sym == 17) {
			sym = 3 + bits(s, 3);
		} else {
			sym = 11 + bits(s, 7);
		}
		if (s->err)
			return -1;
		if (index + sym > nlen + ndist) {
			bad(s, RT_ERR_FORMAT, "code lengths run past the number of codes");
			return -1;
		}
		while (sym--)
			lengths[index++] = len;
	}
	if (lengths[256] == 0) {
		bad(s, RT_ERR_FORMAT, "a dynamic block without an end-of-block code");
		return -1;
	}
	int err = construct(&lencode, lengths, nlen);
	if (err < 0 || (err > 0 && nlen - lencode.count[0] != 1)) {
		bad(s, RT_ERR_FORMAT, "incomplete or over-subscribed literal/length code");
		return -1;
	}
	err = construct(&distcode, lengths + nlen, ndist);
	if (err < 0 || (err > 0 && ndist - distcode.count[0] != 1)) {
		bad(s, RT_ERR_FORMAT, "incomplete or over-subscribed distance code");
		return -1;
	}
	return codes(s, &lencode, &distcode);
}

/* One raw deflate stream from s->in + s->incnt; 0 or -1 with s->err. */
static int inflate_stream(inf *s)
{
	s->bitbuf = 0;
	s->bitcnt = 0;
	int last;
	do {
		last = bits(s, 1);
		int type = bits(s, 2);
		if (s->err)
			return -1;
		int rc = type == 0 ? stored(s) : type == 1 ? fixed(s) : type == 2 ? dynamic(s) : -2;
		if (rc == -2)
			bad(s, RT_ERR_FORMAT, "invalid block type 3 in the compressed data");
		if (rc)
			return -1;
	} while (!last);
	s->bitbuf = 0;          /* the rest of the last byte is padding */
	s->bitcnt = 0;
	return 0;
}

static void crc32_table(uint32_t table[256])
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc32_of(const uint32_t table[256], const unsigned char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int finish(inf *s, void **out, size_t *outn, char *err, size_t errlen)
{
	if (s->err) {
		if (err && errlen)
			snprintf(err, errlen, "%s", s->err);
		free(s->out);
		*out = NULL;
		*outn = 0;
		return s->status;
	}
	*out = s->out ? s->out : malloc(1);
	*outn = s->outcnt;
	if (!*out) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return RT_ERR_NOMEM;
	}
	return RT_OK;
}

int rt_inflate(const void *in, size_t n, size_t max_out, void **out, size_t *outn, char *err,
	       size_t errlen)
{
	if (!in || !out || !outn)
		return RT_ERR_ARG;
	inf s = {.in = in, .inlen = n, .max = max_out};
	inflate_stream(&s);
	return finish(&s, out, outn, err, errlen);
}

int rt_gunzip(const void *in, size_t n, size_t max_out, void **out, size_t *outn, char *err,
	      size_t errlen)
{
	if (!in || !out || !outn)
		return RT_ERR_ARG;
	inf s = {.in = in, .inlen = n, .max = max_out};
	const unsigned char *p = in;
	uint32_t table[256];
	crc32_table(table);
	int members = 0;
	while (!s.err && (members == 0 || s.incnt < n)) {
		size_t at = s.incnt;
		if (n - at < 18) {
			bad(&s, n - at >= 2 && p[at] == 0x1f && p[at + 1] == 0x8b ? RT_ERR_TRUNCATED : RT_ERR_FORMAT,
			    members ? "trailing bytes after the last gzip member" : "not a gzip file (too short)");
			break;
		}
		if (p[at] != 0x1f || p[at + 1] != 0x8b || p[at + 2] != 8) {
			bad(&s, RT_ERR_FORMAT, members ? "trailing bytes after the last gzip member"
						       : "not a gzip file (bad magic or method)");
			break;
		}
		int flg = p[at + 3];
		if (flg & 0xe0) {
			bad(&s, RT_ERR_FORMAT, "reserved gzip header flags are set");
			break;
		}
		size_t q = at + 10;
		if (flg & 4) {          /* FEXTRA */
			size_t xlen = n - q >= 2 ? (size_t)(p[q] | p[q + 1] << 8) : n;
			if (n - q < 2 || n - q - 2 < xlen) {
				bad(&s, RT_ERR_TRUNCATED, "gzip header extra field runs past the end (truncated)");
				break;
			}
			q += 2 + xlen;
		}
		for (int f = 8; f <= 16 && !s.err; f <<= 1) {   /* FNAME, FCOMMENT: NUL-terminated */
			if (!(flg & f))
				continue;
			const unsigned char *z = q < n ? memchr(p + q, 0, n - q) : NULL;
			if (!z)
				bad(&s, RT_ERR_TRUNCATED, "gzip header name or comment runs past the end (truncated)");
			else
				q = (size_t)(z - p) + 1;
		}
		if (!s.err && (flg & 2)) {      /* FHCRC */
			if (n - q < 2)
				bad(&s, RT_ERR_TRUNCATED, "gzip header ends inside its CRC (truncated)");
			else
				q += 2;
		}
		if (s.err)
			break;
		size_t start = s.outcnt;
		s.incnt = q;
		if (inflate_stream(&s))
			break;
		if (n - s.incnt < 8) {
			bad(&s, RT_ERR_TRUNCATED, "gzip member ends before its CRC and length (truncated)");
			break;
		}
		uint32_t crc = le32(p + s.incnt), isize = le32(p + s.incnt + 4);
		s.incnt += 8;
		uint32_t got = s.outcnt > start ? crc32_of(table, s.out + start, s.outcnt - start) : 0;
		if (got != crc) {
			bad(&s, RT_ERR_CHECKSUM, "CRC-32 of the decompressed data does not match (corrupted)");
			break;
		}
		if ((uint32_t)(s.outcnt - start) != isize) {
			bad(&s, RT_ERR_CHECKSUM, "decompressed length does not match the gzip trailer (corrupted)");
			break;
		}
		members++;
	}
	return finish(&s, out, outn, err, errlen);
}
