/* board.h: what a board of templates/targets.mk (a bare-metal target's
 * NAME_BOARD: runtime/board/BOARD.c and BOARD.ld) gives the programs that
 * run on it under its emulator: the test programs of `make test
 * TARGET=...`, the size probe of `make size TARGET=...`
 * (runtime/board/size_probe.c) and libcellrt's kernel test
 * (tests/unit/test_kern_bare.c).
 *
 * The board's file holds the vector table and the reset code (the C
 * runtime's data and bss set up, the FPU enabled, the memory protection
 * armed: the code and constants read-only, a guard below the stack), the
 * system calls of newlib (output through Arm semihosting to the emulator's
 * stdout and stderr, exit with the program's status; no files) and these
 * functions.  Neither the model nor libcellrt calls any of them: a firmware
 * links the generated code and libcellrt with its own startup code.
 */
#ifndef RT_BOARD_H
#define RT_BOARD_H

#include <stddef.h>

/* Writes n bytes to the emulator's standard output (fd 1) or error (fd 2)
 * without the C library: returns 0, or -1 when the host refused. */
int rt_board_write(int fd, const char *s, size_t n);

/* The free memory between the end of .bss and the handlers' stack: what the
 * heap (newlib's malloc, for printf) or a program's own buffers may use. */
void rt_board_free_ram(unsigned char **lo, unsigned char **hi);

/* Stack measurement by painting: rt_board_stack_paint fills the unused
 * stack (below the caller's frame) with a pattern and returns the stack
 * pointer it painted below; rt_board_stack_used(sp) is how many bytes
 * below sp have been written since (the deepest point reached). */
size_t rt_board_stack_paint(void);
size_t rt_board_stack_used(size_t sp);
/* The bytes the linker script reserves for the stack. */
size_t rt_board_stack_size(void);

#endif
