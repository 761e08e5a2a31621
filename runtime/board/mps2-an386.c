/* mps2-an386.c: the board of TARGET=cortex-m4 (templates/targets.mk): Arm's
 * MPS2 with the AN386 image, a Cortex-M4F, as qemu-system-arm -M mps2-an386
 * emulates it; with mps2-an386.ld, everything a program of the test and
 * size targets needs below the C library (board.h).  Written for cellc from
 * the Armv7-M Architecture Reference Manual and Arm's semihosting
 * specification.
 *
 * Reset (rt_board_reset): the FPU enabled (CPACR), .data copied from flash,
 * .bss zeroed, the MPU armed (the code memory read-only; the 1 MiB below
 * the RAM, where the program's stack overflows to, no access), the
 * configurable faults enabled, the program's stack painted
 * (rt_board_stack_paint) and main called in thread mode on the process
 * stack, so that the handlers keep a stack of their own (the top 1 KiB of
 * the RAM, the main stack) when the program's overflows; main's status
 * goes to exit().
 *
 * Output and exit go through Arm semihosting (BKPT 0xAB; qemu-system-arm
 * -semihosting-config enable=on,target=native): SYS_OPEN of ":tt" gives the
 * emulator's stdout (mode "w") and stderr (mode "a"), SYS_WRITE writes to
 * them, SYS_EXIT_EXTENDED ends the emulator with the program's status.  The
 * system calls of newlib (_write, _exit, _sbrk and the few its stdio names)
 * are defined on them: no files (_open is not defined: a program that
 * opens one does not link), a heap in the free RAM for newlib's printf.
 * A fault prints what and where (the faulting instruction, the fault
 * status, the address: a write to the read-only code memory, a stack
 * overflow) and exits with status 3.
 */
#include "board.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

/* ---- the memory map (mps2-an386.ld) ---- */

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern unsigned char __free_start[], __free_end[], __stack_bottom[], __stack_top[], __handler_stack_top[];

/* the code memory's size; the guard below the RAM (and the stack), 1 MiB
 * (the MPU's regions are aligned to their power-of-two size); the paint */
enum { FLASH_SIZE = 4 << 20, GUARD_SIZE = 1 << 20, PAINT = 0xCE11CE11u };

/* ---- system control registers (Armv7-M ARM, B3.2 and B3.5) ---- */

#define REG(a) (*(volatile uint32_t *)(a))
#define SHCSR REG(0xE000ED24)   /* system handler control and state */
#define CFSR REG(0xE000ED28)    /* configurable fault status */
#define HFSR REG(0xE000ED2C)    /* hard fault status */
#define MMFAR REG(0xE000ED34)   /* memory management fault address */
#define BFAR REG(0xE000ED38)    /* bus fault address */
#define CPACR REG(0xE000ED88)   /* coprocessor access control */
#define MPU_CTRL REG(0xE000ED94)
#define MPU_RNR REG(0xE000ED98)
#define MPU_RBAR REG(0xE000ED9C)
#define MPU_RASR REG(0xE000EDA0)

static inline void barrier(void)
{
	__asm__ volatile("dsb\n\tisb" ::: "memory");
}

/* ---- semihosting ---- */

enum { SYS_OPEN = 0x01, SYS_WRITE = 0x05, SYS_EXIT_EXTENDED = 0x20, ADP_STOPPED_APPLICATION_EXIT = 0x20026 };

static int semihost(int op, const void *arg)
{
	register int r0 __asm__("r0") = op;
	register const void *r1 __asm__("r1") = arg;
	__asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

/* the host handles of stdout and stderr, opened on first use (0: not yet) */
static int tt_handle[3];

int rt_board_write(int fd, const char *s, size_t n)
{
	if (fd != 1 && fd != 2)
		return -1;
	if (!tt_handle[fd]) {
		/* ":tt" opened "w" (4) is the host's stdout, "a" (8) its stderr */
		const uint32_t open_args[3] = {(uint32_t)":tt", fd == 1 ? 4u : 8u, 3};
		int h = semihost(SYS_OPEN, open_args);
		if (h < 0)
			return -1;
		tt_handle[fd] = h + 1;
	}
	const uint32_t args[3] = {(uint32_t)(tt_handle[fd] - 1), (uint32_t)s, (uint32_t)n};
	return semihost(SYS_WRITE, args) == 0 ? 0 : -1;       /* the bytes not written */
}

__attribute__((noreturn)) void _exit(int status)
{
	const uint32_t args[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
	semihost(SYS_EXIT_EXTENDED, args);
	for (;;)        /* no host to stop the emulator: wait */
		__asm__ volatile("wfi");
}

/* ---- newlib's system calls ---- */

int _write(int fd, const char *s, int n)
{
	if (rt_board_write(fd, s, (size_t)n) != 0) {
		errno = EBADF;
		return -1;
	}
	return n;
}

int _read(int fd, char *s, int n)
{
	(void)fd, (void)s, (void)n;
	return 0;       /* no input: end of file */
}

int _close(int fd)
{
	(void)fd;
	errno = EBADF;
	return -1;
}

int _lseek(int fd, int off, int whence)
{
	(void)fd, (void)off, (void)whence;
	errno = ESPIPE;
	return -1;
}

int _fstat(int fd, struct stat *st)
{
	(void)fd;
	st->st_mode = S_IFCHR;  /* a terminal: line-buffered */
	return 0;
}

int _isatty(int fd)
{
	return fd >= 0 && fd <= 2;
}

/* newlib's __libc_fini_array names them; no start files define them here */
void _init(void)
{
}

void _fini(void)
{
}

int _getpid(void)
{
	return 1;
}

int _kill(int pid, int sig)
{
	(void)pid;
	_exit(128 + sig);       /* abort() */
}

void *_sbrk(ptrdiff_t incr)
{
	static unsigned char *brk = __free_start;
	if (incr < 0 || (size_t)incr > (size_t)(__free_end - brk)) {
		errno = ENOMEM;
		return (void *)-1;
	}
	unsigned char *p = brk;
	brk += incr;
	return p;
}

void rt_board_free_ram(unsigned char **lo, unsigned char **hi)
{
	*lo = __free_start;
	*hi = __free_end;
}

/* ---- the stack ---- */

static inline uintptr_t stack_pointer(void)
{
	uintptr_t sp;
	__asm__ volatile("mov %0, sp" : "=r"(sp));
	return sp;
}

size_t rt_board_stack_paint(void)
{
	uintptr_t sp = stack_pointer();
	/* below this function's own frame, with room for what it calls (nothing) */
	for (uint32_t *p = (uint32_t *)(void *)__stack_bottom; (uintptr_t)p < ((sp - 64) & ~(uintptr_t)3); p++)
		*p = PAINT;
	return sp;
}

size_t rt_board_stack_used(size_t sp)
{
	const uint32_t *p = (const uint32_t *)(const void *)__stack_bottom;
	while ((uintptr_t)p < sp && *p == PAINT)
		p++;
	return (uintptr_t)p < sp ? sp - (uintptr_t)p : 0;
}

size_t rt_board_stack_size(void)
{
	return (size_t)(__stack_top - __stack_bottom);
}

/* ---- faults ---- */

static void put(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	rt_board_write(2, s, n);
}

static void put_hex(uint32_t v)
{
	char b[11] = "0x";
	for (int i = 0; i < 8; i++)
		b[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
	b[10] = 0;
	put(b);
}

/* frame: the registers the core stacked (r0-r3, r12, lr, pc, xpsr) */
__attribute__((used, noreturn)) static void fault_report(const uint32_t *frame)
{
	static const char *const names[] = {"", "", "NMI", "HardFault", "MemManage fault", "BusFault", "UsageFault"};
	uint32_t ipsr, cfsr = CFSR, mmfar = MMFAR;
	__asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
	ipsr &= 0x1ff;
	put("mps2-an386: ");
	put(ipsr < sizeof names / sizeof names[0] ? names[ipsr] : "unexpected interrupt");
	/* the frame, unless the stack it was to be pushed on was out of bounds */
	if ((uintptr_t)frame >= (uintptr_t)__stack_bottom && (uintptr_t)frame + 32 <= (uintptr_t)__handler_stack_top) {
		put(" at pc ");
		put_hex(frame[6]);
	}
	put(" (CFSR ");
	put_hex(cfsr);
	put(", HFSR ");
	put_hex(HFSR);
	put(")");
	if (cfsr & 0x80) {      /* MMARVALID */
		put(", address ");
		put_hex(mmfar);
		if (mmfar < FLASH_SIZE)
			put(": a write to the code memory (code and constants are read-only)");
		else if (mmfar >= (uintptr_t)__stack_bottom - GUARD_SIZE && mmfar < (uintptr_t)__stack_bottom)
			put(": the stack overflowed (give it more: -Wl,--defsym=__stack_size=N)");
	} else if (cfsr & 0x10) {       /* MSTKERR: the frame could not be stacked */
		put(": the stack overflowed (give it more: -Wl,--defsym=__stack_size=N)");
	} else if (cfsr & 0x8000) {     /* BFARVALID */
		put(", address ");
		put_hex(BFAR);
	}
	put("\n");
	_exit(3);
}

/* The handlers' stack is the main stack; the faulting code's frame is on
 * the stack EXC_RETURN names (bit 2: the process stack). */
__attribute__((naked)) static void fault_entry(void)
{
	__asm__ volatile("tst lr, #4\n\t"
			 "ite eq\n\t"
			 "mrseq r0, msp\n\t"
			 "mrsne r0, psp\n\t"
			 "b fault_report\n\t");
}

/* ---- reset ---- */

int main(int argc, char **argv);
void exit(int status) __attribute__((noreturn));

/* main on the program's stack, painted first (rt_board_stack_used), with
 * no arguments but its name */
__attribute__((used, noreturn)) static void start_program(void)
{
	static char name[] = "mps2-an386", *argv[] = {name, NULL};
	rt_board_stack_paint();
	exit(main(1, argv));
}

__attribute__((noreturn)) void rt_board_reset(void)
{
	CPACR |= 0xfu << 20;    /* CP10 and CP11 (the FPU): full access */
	barrier();
	for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;)
		*d++ = *s++;
	for (uint32_t *d = __bss_start; d < __bss_end;)
		*d++ = 0;
	/* MPU region 0: the 4 MiB code memory, read-only (AP 0b110), executable;
	 * region 1: the 1 MiB below the RAM (the program's stack), no access
	 * (AP 0), not executable; the default map elsewhere (PRIVDEFENA) */
	MPU_RNR = 0;
	MPU_RBAR = 0x00000000u;
	MPU_RASR = (6u << 24) | (1u << 17) | (21u << 1) | 1u;  /* AP, C, SIZE 2^(21+1), ENABLE */
	MPU_RNR = 1;
	MPU_RBAR = (uint32_t)__stack_bottom - GUARD_SIZE;
	MPU_RASR = (1u << 28) | (19u << 1) | 1u;                /* XN, SIZE 2^(19+1), ENABLE */
	MPU_CTRL = 5u;                                          /* ENABLE, PRIVDEFENA */
	SHCSR |= 7u << 16;      /* MemManage, BusFault and UsageFault handlers */
	barrier();
	/* thread mode on the process stack, from the top of the program's */
	__asm__ volatile("msr psp, %0\n\t"
			 "movs r0, #2\n\t"
			 "msr control, r0\n\t"
			 "isb\n\t"
			 "b start_program" : : "r"(__stack_top) : "r0", "memory");
	__builtin_unreachable();
}

/* The vector table (Armv7-M ARM B1.5.3): the main stack's top, reset, the
 * system exceptions, and 32 external interrupts, none of them enabled. */
typedef void (*vector)(void);
__attribute__((section(".vectors"), used)) static const vector vectors[16 + 32] = {
	(vector)(uintptr_t)__handler_stack_top, rt_board_reset,
	[2 ... 16 + 32 - 1] = fault_entry,
};
