/* version.h: the version of cellc and libcellrt (the shared library's soname
 * carries its major number; the emitted files record it). */
#ifndef CELLC_VERSION_H
#define CELLC_VERSION_H

#define CELLC_VERSION "0.1.0"

#endif
