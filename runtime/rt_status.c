/* rt_status.c: one readable sentence per rt_status code (cellrt.h).
 *
 * Emitted models forward their NAME_status_str to rt_status_str, and the
 * compiler uses it for tensor-file errors, so every message reads well after
 * "cannot open FILE: ".
 */
#include "cellrt.h"

static const char *const messages[RT_STATUS_COUNT] = {
	[RT_OK] = "success",
	[RT_ERR_NOMEM] = "out of memory",
	[RT_ERR_IO] = "file could not be opened, read or written",
	[RT_ERR_FORMAT] = "not a cellc tensor file, unknown version, or malformed header or table",
	[RT_ERR_TRUNCATED] = "file is shorter than its header and table say (truncated)",
	[RT_ERR_CHECKSUM] = "file contents do not match the stored checksum (corrupted)",
	[RT_ERR_MISMATCH] = "tensors do not belong to this model (name, dtype or shape differ)",
	[RT_ERR_SHAPE] = "dimensions passed at run time are invalid for this model",
	[RT_ERR_ARG] = "invalid argument (NULL pointer or value out of range)",
	[RT_ERR_INDEX] = "an index tensor holds an out-of-range index",
	[RT_ERR_NONFINITE] = "NaN or infinity where finite numbers are required",
	[RT_ERR_ODE_STEPS] = "an ODE solver reached its step limit (max_steps) before the end of the interval",
};
_Static_assert(RT_STATUS_COUNT == 12, "a new rt_status code needs its sentence here");

/* A status from an older or newer runtime (or garbage) still gets a sentence:
 * callers print the result unconditionally. */
const char *rt_status_str(int status)
{
	if (status < 0 || status >= RT_STATUS_COUNT || !messages[status])
		return "unknown status code";
	return messages[status];
}
