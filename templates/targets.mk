# ---- the cross targets: one table (templates/targets.mk) -------------------
# cellc's own Makefile includes this file and cellc prints it into every
# Makefile it writes, so both read the same rows.  TARGET=NAME builds for
# row NAME (`make runtime TARGET=NAME` in cellc's tree: libcellrt in
# build/NAME/; `make TARGET=NAME`, `make test TARGET=NAME` in a generated
# directory); TARGET unset builds for the host, as without this file.
# A row is NAME in CELLC_TARGETS and these variables:
#   NAME_CC      the C compiler                NAME_AR    its archiver
#   NAME_CFLAGS  the target's code generation (added to CFLAGS)
#   NAME_LDFLAGS how its programs are linked (added to the link lines)
#   NAME_LIBS    what its programs link besides libcellrt
#   NAME_RUN     the command that runs one of its programs here (an emulator)
#   NAME_BLAS    its libcellrt's BLAS: none (the portable and SIMD kernels)
#   NAME_OPENMP  the OpenMP flag of its code (empty: single-threaded)
#   NAME_SIZE    the tool that reports code and data sizes
#   NAME_PKGS    the Debian packages of CC, RUN and SIZE (make deps installs them)
#   NAME_TEST_PKGS  what the unit tests of libcellrt link for it (package:arch;
#                empty: Debian builds no Check for the target, and its kernel
#                tests run under tests/unit/check_bare.h instead)
#   NAME_BOARD   a target without an OS: the board its programs run on
#                (runtime/board/BOARD.c and BOARD.ld: startup code, linker
#                script, output and exit through the emulator), which `make
#                runtime` builds beside libcellrt and `make size` measures
#                the model on; empty for a target with an OS
#   NAME_ENV     the environment its tools need (VAR=VALUE words, exported
#                to every recipe of a build for the target)
#   NAME_MODULE  a suffix: `make TARGET=NAME` in a generated directory also
#                links libMODEL.a and libcellrt into one module, MODEL + this
#                suffix, that exports the model's C API (every function
#                MODEL.c defines, and malloc and free) to the program that
#                loads it; empty: none
#   NAME_MODULE_LDFLAGS  how the module is linked, ending in the option that
#                takes the comma-separated exports
#   NAME_NM      the symbol lister that finds those functions in MODEL.o
# Paths in a row start at $(CELLRT), the cellc tree (cellc's own Makefile
# sets it to its directory; a generated Makefile has its CELLRT).
CELLC_TARGETS := aarch64 cortex-m4 wasm32

# aarch64 Linux (Debian's cross toolchain), run under qemu-user with the
# cross sysroot; NEON is the baseline, the dot-product and BF16 kernels are
# chosen at run time (qemu's -cpu, or QEMU_CPU=..., picks the CPU emulated);
# a function or datum a section of its own, so that a program's link keeps
# only the parts of libcellrt it calls (--gc-sections)
aarch64_CC        := aarch64-linux-gnu-gcc
aarch64_AR        := aarch64-linux-gnu-ar
aarch64_CFLAGS    := -march=armv8-a -ffunction-sections -fdata-sections
aarch64_LDFLAGS   := -Wl,--gc-sections
aarch64_LIBS      := -lm
aarch64_RUN       := qemu-aarch64 -L /usr/aarch64-linux-gnu
aarch64_BLAS      := none
aarch64_OPENMP    := -fopenmp
aarch64_SIZE      := aarch64-linux-gnu-size
aarch64_PKGS      := gcc-aarch64-linux-gnu qemu-user
aarch64_TEST_PKGS := check:arm64
aarch64_BOARD     :=

# Cortex-M4F without an OS (Arm's GNU toolchain and newlib, as Debian packs
# them): hard-float (FPv4-SP, single precision) and the DSP extension
# (SMLAD: the int8 kernel), single-threaded, linked with the board's
# startup code and memory map; run on qemu-system-arm's MPS2 AN386 board
# with semihosting (the program's stdout, stderr and exit status are the
# emulator's).  Its programs are firmware images: `make test` and `make
# size` load them with -kernel.  The generated code must be compiled with
# --embed-weights --no-malloc (NAME.c says so otherwise).
cortex-m4_CC        := arm-none-eabi-gcc
cortex-m4_AR        := arm-none-eabi-ar
cortex-m4_CFLAGS    := -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb -ffunction-sections -fdata-sections
cortex-m4_LDFLAGS   := -nostartfiles -Wl,--gc-sections -T $(CELLRT)/runtime/board/mps2-an386.ld
cortex-m4_LIBS      := $(CELLRT)/build/cortex-m4/mps2-an386.o -lm
cortex-m4_RUN       := qemu-system-arm -M mps2-an386 -nographic -monitor none -semihosting-config enable=on,target=native -kernel
cortex-m4_BLAS      := none
cortex-m4_OPENMP    :=
cortex-m4_SIZE      := arm-none-eabi-size
cortex-m4_PKGS      := gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
cortex-m4_TEST_PKGS :=
cortex-m4_BOARD     := mps2-an386

# WebAssembly (Debian's emscripten), run under Node: SIMD128 (-msimd128,
# every browser and Node since 2021; an engine without it refuses the
# module, so there is no choice at run time), single-threaded (no OpenMP);
# a program is NAME (its JavaScript, which Node runs) and NAME.wasm, reading
# this machine's files through Node (NODERAWFS) and compiled as it loads
# (Node 18 and later have a fetch that emscripten 3.1.6's loader would try
# on the file otherwise).  The JavaScript optimiser of emcc needs the acorn
# parser, which Debian installs for its own node in /usr/share/nodejs.
# `make TARGET=wasm32` in a generated directory also links NAME.wasm, the
# module a web page or Node loads (its JavaScript API: cellc compile --js):
# standalone (no emscripten JavaScript; the WASI calls it makes are a few
# that NAME.mjs answers), its memory growing as the model allocates.
wasm32_CC        := emcc
wasm32_AR        := emar
wasm32_CFLAGS    := -msimd128
wasm32_LDFLAGS   := -sNODERAWFS=1 -sWASM_ASYNC_COMPILATION=0 -sALLOW_MEMORY_GROWTH=1 -sEXIT_RUNTIME=1
wasm32_LIBS      := -lm
wasm32_RUN       := node
wasm32_BLAS      := none
wasm32_OPENMP    :=
wasm32_SIZE      := llvm-size-14
wasm32_PKGS      := emscripten nodejs
wasm32_TEST_PKGS :=
wasm32_BOARD     :=
wasm32_ENV       := NODE_PATH=/usr/share/nodejs$(if $(NODE_PATH),:$(NODE_PATH))
wasm32_MODULE    := .wasm
wasm32_MODULE_LDFLAGS := -sSTANDALONE_WASM --no-entry -sALLOW_MEMORY_GROWTH=1 -sEXPORTED_FUNCTIONS=
wasm32_NM        := emnm

# every target's packages (cellc's `make deps`)
CELLC_TARGET_PKGS := $(foreach t,$(CELLC_TARGETS),$($(t)_PKGS) $($(t)_TEST_PKGS))

ifneq ($(TARGET),)
ifeq ($(filter $(TARGET),$(CELLC_TARGETS)),)
$(error TARGET=$(TARGET) is not a target; the targets: $(CELLC_TARGETS) (TARGET unset builds for this machine))
endif
CC            := $($(TARGET)_CC)
AR            := $($(TARGET)_AR)
TARGET_CFLAGS := $($(TARGET)_CFLAGS)
TARGET_LDFLAGS := $($(TARGET)_LDFLAGS)
TARGET_LIBS   := $($(TARGET)_LIBS)
TARGET_RUN    := $($(TARGET)_RUN)
TARGET_SIZE   := $($(TARGET)_SIZE)
TARGET_BOARD  := $($(TARGET)_BOARD)
$(foreach e,$($(TARGET)_ENV),$(eval export $(e)))
# a recipe line that fails, naming the Debian packages, when one of the
# tools $(1) is missing
target_tools = @for t in $(1); do command -v $$t >/dev/null 2>&1 || { echo "TARGET=$(TARGET): $$t not found: install the Debian packages $($(TARGET)_PKGS) (apt-get install $($(TARGET)_PKGS), or make deps in cellc's tree)" >&2; exit 1; }; done
endif
