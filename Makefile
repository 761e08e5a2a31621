# cellc: build, demo, check, bench, install.
#
#   make            build build/cellc and build/libcellrt.a
#   make demo       install missing packages, build, compile the example model,
#                   run it and compare with the PyTorch reference
#   make check      install missing packages, build, run every test; ends with
#                   "N passed, M failed" and fails on any failure
#   make install    PREFIX=/usr/local (DESTDIR for staging): cellc, libcellrt
#                   (static and shared, OpenBLAS and BLAS-free), cellrt.h,
#                   cellrt.pc and cellrt-noblas.pc, man pages cellc(1) and
#                   cellc-cell(5); docs/install.md
#   make uninstall  removes exactly those files (same PREFIX, DESTDIR)
#   make BLAS=none  also build libcellrt without OpenBLAS (portable kernels):
#                   build/noblas/libcellrt.a, which emitted code links with
#                   `make BLAS=none` in its own directory
#   make BLAS=none runtime   only that library: all a machine that runs
#                   emitted code needs (a C compiler, no OpenBLAS)
#   make runtime TARGET=aarch64   libcellrt cross-built for a target of
#                   templates/targets.mk (BLAS-free, its SIMD kernels) into
#                   build/aarch64/; `make unit-tests TARGET=aarch64` its
#                   unit tests (run under qemu by the harness group
#                   cross_aarch64); TARGET=cortex-m4 (bare metal) also
#                   builds its board's startup object beside the library;
#                   docs/deploying.md
#   make ort        install onnxruntime-node (npm, --ignore-scripts) into
#                   build/ort for `cellc verify --oracle onnxruntime`
#   make web        install playwright-core and onnxruntime-web (npm, pinned,
#                   --ignore-scripts) into build/web: the WebAssembly tests
#                   drive Debian's chromium, the benchmark's reference
#   make bench      time the generated code against PyTorch and ONNX Runtime
#                   (bench/run.py: table, build/bench/results.csv and .svg;
#                   about 10 minutes on 2 cores; not part of check), then
#                   data-parallel training with 1 and 2 MPI ranks and its
#                   scaling model (bench/mpi_scaling.py, about a minute), then
#                   Silero VAD v4/v5 per 512-sample chunk against ONNX Runtime
#                   (bench/silero_bench.py, npm models; half a minute), then
#                   Silero VAD v5 compiled to WebAssembly against
#                   onnxruntime-web in Node (bench/wasm_bench.py; half a minute)
#
# Debian packages are installed by `make deps` (called by demo and check) when
# missing; it needs root (or sudo).

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
PREFIX  ?= /usr/local
MANDIR  ?= $(PREFIX)/share/man
# the version (compiler/base/version.h) names the shared library: libcellrt.so.X.Y.Z
# with soname libcellrt.so.X
CELLC_VER := $(shell sed -n 's/^\#define CELLC_VERSION "\(.*\)"/\1/p' compiler/base/version.h)
SOMAJOR   := $(firstword $(subst ., ,$(CELLC_VER)))
B       := build
SAN     := build-san

PY      := /usr/bin/python3
# the cross targets (TARGET=NAME): their compilers, flags and emulators; a
# row's paths start at CELLRT, this tree
CELLRT  := .
include templates/targets.mk
# (chromium: the WebAssembly tests' browser, group cross_wasm32)
DEB_PKGS := gcc make libc6-dev pkg-config libprotobuf-c-dev protobuf-c-compiler \
	libopenblas-dev check python3-onnx python3-numpy python3-torch g++ valgrind \
	cmake groff-base man-db libopenmpi-dev openmpi-bin \
	clang libclang-rt-14-dev espeak-ng sox chromium $(CELLC_TARGET_PKGS)

# compiler/: one folder per stage (docs/architecture.md); each folder is on
# the include path, so sources name headers without their folder
COMPILER_DIRS := base ir onnx cell passes eval emit cmd
COMPILER_SRC := $(foreach d,$(COMPILER_DIRS),$(wildcard compiler/$(d)/*.c))
COMPILER_HDR := $(foreach d,$(COMPILER_DIRS),$(wildcard compiler/$(d)/*.h compiler/$(d)/*.def))
RUNTIME_SRC  := $(wildcard runtime/*.c)
PROTO_C      := $(B)/gen/onnx.pb-c.c

CPPFLAGS_C := $(COMPILER_DIRS:%=-Icompiler/%) -Iruntime -I$(B)/gen
LIBS_C     := -lprotobuf-c -lopenblas -lm
LIBS_RT    := -lopenblas -lm

.PHONY: all deps demo check check-quick bench install uninstall clean san ort web runtime

# BLAS=none: libcellrt with its portable kernels, no OpenBLAS, for emitted
# code (cellc itself always links the OpenBLAS build).
BLAS ?= openblas
NB   := $(B)/noblas
ifeq ($(BLAS),none)
RTLIB := $(NB)/libcellrt.a
RTSHARED := $(NB)/libcellrt-noblas.so
RTPC := $(B)/pkgconfig/cellrt-noblas.pc
else
RTLIB := $(B)/libcellrt.a
RTSHARED := $(B)/libcellrt.so
RTPC := $(B)/pkgconfig/cellrt.pc
endif

ifeq ($(TARGET),)
all: $(B)/cellc $(RTLIB) $(RTSHARED) $(RTPC)
runtime: $(RTLIB) $(RTSHARED) $(RTPC)
else
# TARGET=NAME (templates/targets.mk): libcellrt for that target, in its own
# folder, with the target's BLAS (none) and flags; cellc itself runs here,
# so `make all` is that library too
TB := $(B)/$(TARGET)
all runtime: $(TB)/libcellrt.a
TB_RT_OBJ := $(RUNTIME_SRC:runtime/%.c=$(TB)/rt/%.o)
# position-independent where a shared library could be made of it; a
# board's firmware is linked at fixed addresses
$(TB)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h) templates/targets.mk
	$(call target_tools,$(CC))
	@mkdir -p $(TB)/rt
	$(CC) $(CFLAGS) -O3 $(TARGET_CFLAGS) $(WARN) $(if $(TARGET_BOARD),,-fPIC) $(if $(filter none,$($(TARGET)_BLAS)),-DCELLRT_NO_BLAS) -Iruntime -c $< -o $@
$(TB)/libcellrt.a: $(TB_RT_OBJ)
	$(AR) rcs $@ $^
ifneq ($(TARGET_BOARD),)
# a target without an OS: its board's startup code and system calls
# (runtime/board/BOARD.c), which the programs of `make test` and `make
# size` link as an object (NAME_LIBS)
all runtime: $(TB)/$(TARGET_BOARD).o
$(TB)/$(TARGET_BOARD).o: runtime/board/$(TARGET_BOARD).c runtime/board/board.h templates/targets.mk
	$(call target_tools,$(CC))
	@mkdir -p $(TB)
	$(CC) $(CFLAGS) -O2 $(TARGET_CFLAGS) $(WARN) -Iruntime/board -c $< -o $@
endif
endif

# a package named PKG:ARCH (a target's library for its unit tests) first
# adds ARCH to dpkg's foreign architectures
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; \
	  for a in $$(echo "$$missing" | tr ' ' '\n' | sed -n 's/.*:\(.*\)/\1/p' | sort -u); do \
	    dpkg --print-foreign-architectures | grep -qx "$$a" || $$SUDO dpkg --add-architecture "$$a" \
	      || { echo "make deps: could not add the architecture $$a" >&2; exit 1; }; \
	  done; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null \
	    || { echo "make deps: could not install:$$missing" >&2; exit 1; }; \
	fi

$(B)/gen/onnx.pb-c.c $(B)/gen/onnx.pb-c.h: schemas/onnx.proto
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen -Ischemas schemas/onnx.proto

# ---- runtime: libcellrt.a ------------------------------------------------
RT_OBJ := $(RUNTIME_SRC:runtime/%.c=$(B)/rt/%.o)
$(B)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h)
	@mkdir -p $(B)/rt
	$(CC) $(CFLAGS) -O3 $(WARN) -fPIC -Iruntime -c $< -o $@
$(B)/libcellrt.a: $(RT_OBJ)
	ar rcs $@ $^
NB_RT_OBJ := $(RUNTIME_SRC:runtime/%.c=$(NB)/rt/%.o)
$(NB)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h)
	@mkdir -p $(NB)/rt
	$(CC) $(CFLAGS) -O3 $(WARN) -fPIC -DCELLRT_NO_BLAS -Iruntime -c $< -o $@
$(NB)/libcellrt.a: $(NB_RT_OBJ)
	ar rcs $@ $^
	ln -sf libcellrt.a $(NB)/libcellrt-noblas.a

# shared libraries: libcellrt.so.X.Y.Z (soname libcellrt.so.X) and the
# BLAS-free libcellrt-noblas.so.X.Y.Z, with their links
$(B)/libcellrt.so: $(RT_OBJ)
	$(CC) -shared -Wl,-soname,libcellrt.so.$(SOMAJOR) -o $@.$(CELLC_VER) $^ -lopenblas -lm
	ln -sf libcellrt.so.$(CELLC_VER) $@.$(SOMAJOR) && ln -sf libcellrt.so.$(CELLC_VER) $@
$(NB)/libcellrt-noblas.so: $(NB_RT_OBJ)
	$(CC) -shared -Wl,-soname,libcellrt-noblas.so.$(SOMAJOR) -o $@.$(CELLC_VER) $^ -lm
	ln -sf libcellrt-noblas.so.$(CELLC_VER) $@.$(SOMAJOR) && ln -sf libcellrt-noblas.so.$(CELLC_VER) $@

# pkg-config files from runtime/cellrt.pc.in:
# $(call pcfile,PACKAGE,LIBRARY,FLAVOUR,PRIVATE LIBS,PREFIX,LIBDIR,INCLUDEDIR)
pcfile = sed -e 's|@name@|$(1)|' -e 's|@lib@|$(2)|' -e 's|@flavour@|$(3)|' \
	-e 's|@private@|$(4)|' -e 's|@prefix@|$(5)|' -e 's|@libdir@|$(6)|' \
	-e 's|@includedir@|$(7)|' -e 's|@version@|$(CELLC_VER)|' runtime/cellrt.pc.in
# the build tree's own, for CMakeLists.txt written by build/cellc
$(B)/pkgconfig/cellrt.pc: runtime/cellrt.pc.in Makefile
	@mkdir -p $(B)/pkgconfig
	$(call pcfile,cellrt,cellrt,OpenBLAS build,-lopenblas -lm,$(abspath .),$${prefix}/$(B),$${prefix}/runtime) > $@
$(B)/pkgconfig/cellrt-noblas.pc: runtime/cellrt.pc.in Makefile
	@mkdir -p $(B)/pkgconfig
	$(call pcfile,cellrt-noblas,cellrt-noblas,portable kernels without BLAS,-lm,$(abspath .),$${prefix}/$(NB),$${prefix}/runtime) > $@

# ---- compiler: cellc -----------------------------------------------------
C_OBJ := $(COMPILER_SRC:compiler/%.c=$(B)/cc/%.o) $(B)/cc/onnx.pb-c.o $(B)/cc/templates.o
$(B)/cc/%.o: compiler/%.c $(B)/gen/onnx.pb-c.h $(COMPILER_HDR) runtime/cellrt.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS_C) -c $< -o $@
$(B)/cc/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	@mkdir -p $(B)/cc
	$(CC) $(CFLAGS) -I$(B)/gen -c $< -o $@
# templates/* (fixed parts of emitted files) are embedded into cellc
TEMPLATES := $(filter-out templates/embed.sh,$(wildcard templates/*))
$(B)/gen/templates.c: $(TEMPLATES) templates/embed.sh
	@mkdir -p $(B)/gen
	sh templates/embed.sh $(TEMPLATES) > $@.tmp && mv $@.tmp $@
$(B)/cc/templates.o: $(B)/gen/templates.c compiler/emit/emit.h
	@mkdir -p $(B)/cc
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS_C) -c $< -o $@
$(B)/cellc: $(C_OBJ) $(B)/libcellrt.a
	$(CC) $(CFLAGS) -o $@ $(C_OBJ) $(B)/libcellrt.a $(LIBS_C)

# ---- sanitizer build of the compiler (used by the malformed-input tests) ---
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_C_OBJ := $(COMPILER_SRC:compiler/%.c=$(SAN)/cc/%.o) $(SAN)/cc/onnx.pb-c.o $(SAN)/cc/templates.o
SAN_RT_OBJ := $(RUNTIME_SRC:runtime/%.c=$(SAN)/rt/%.o)
$(SAN)/cc/%.o: compiler/%.c $(B)/gen/onnx.pb-c.h $(COMPILER_HDR) runtime/cellrt.h
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) $(WARN) $(CPPFLAGS_C) -c $< -o $@
$(SAN)/cc/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	@mkdir -p $(SAN)/cc
	$(CC) $(SANFLAGS) -I$(B)/gen -c $< -o $@
$(SAN)/cc/templates.o: $(B)/gen/templates.c compiler/emit/emit.h
	@mkdir -p $(SAN)/cc
	$(CC) $(SANFLAGS) $(WARN) $(CPPFLAGS_C) -c $< -o $@
$(SAN)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h)
	@mkdir -p $(SAN)/rt
	$(CC) $(SANFLAGS) $(WARN) -Iruntime -c $< -o $@
$(SAN)/libcellrt.a: $(SAN_RT_OBJ)
	ar rcs $@ $^
$(SAN)/cellc: $(SAN_C_OBJ) $(SAN)/libcellrt.a
	$(CC) $(SANFLAGS) -o $@ $(SAN_C_OBJ) $(SAN)/libcellrt.a $(LIBS_C)
san: $(SAN)/cellc $(SAN)/libcellrt.a

# ---- demo, tests, install --------------------------------------------------
demo: deps
	@$(MAKE) --no-print-directory all
	@sh examples/demo.sh

# the builds of check and check-quick use every core unless make was given
# its own -j (CI runs a plain `make check` on 2 cores)
NPROC   := $(shell nproc 2>/dev/null || echo 2)
JOBS_J  := $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

check: deps
	@$(MAKE) --no-print-directory $(JOBS_J) all san
	@sh tests/run.sh

# the fast tier of the edit-compile-test loop (docs/testing.md): unit and IR
# text tests and a sample of each golden group, under 3 minutes; `make check`
# stays the gate
check-quick: deps
	@$(MAKE) --no-print-directory $(JOBS_J) all san
	@sh tests/run.sh --quick

# ---- demo-train (issue 5): train an lstm and a momentum_lstm classifier ------
# on row-by-row Fashion-MNIST (examples/demo_train.sh; Debian's
# dataset-fashion-mnist joins the packages `make deps` installs).
.PHONY: demo-train
demo-train:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) dataset-fashion-mnist"
	@$(MAKE) --no-print-directory all
	@sh examples/demo_train.sh

# ---- experiments (issue 21): the momentum, NAG and incremental-RNN papers' ----
# long-dependency experiments with generated training programs beside PyTorch
# (experiments/README.md).  `make exp-NAME` runs one in full and writes
# experiments/results/NAME/; `make check` runs each at a smoke size.
EXPERIMENTS := adding adding-short copying pixel gradients nag nag-multiplication nag-memorization irnn
.PHONY: $(EXPERIMENTS:%=exp-%)
$(EXPERIMENTS:%=exp-%): exp-%:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) dataset-fashion-mnist"
	@$(MAKE) --no-print-directory all
	@$(PY) experiments/run.py $*

# fixtures and unit-test binaries (tests/tests.mk; tests/run.sh makes them)
include tests/tests.mk

# onnxruntime-node for `cellc verify --oracle onnxruntime` (which finds it in
# build/ort, or installs it there itself); the Linux binary ships inside the
# npm package, so its install scripts are not run.
ORT_DIR := $(B)/ort
ort: $(ORT_DIR)/node_modules/onnxruntime-node/package.json
$(ORT_DIR)/node_modules/onnxruntime-node/package.json:
	@mkdir -p $(ORT_DIR)
	npm install --prefix $(ORT_DIR) --ignore-scripts --no-audit --no-fund onnxruntime-node

# npm packages of the WebAssembly tests and benchmark, pinned, into build/web:
# playwright-core drives Debian's chromium (it downloads no browser of its
# own), onnxruntime-web is the benchmark's WebAssembly reference
WEB_DIR := $(B)/web
WEB_NPM := playwright-core@1.65.2 onnxruntime-web@1.31.1
web: $(WEB_DIR)/.npm
$(WEB_DIR)/.npm: Makefile
	@mkdir -p $(WEB_DIR)
	npm install --prefix $(WEB_DIR) --ignore-scripts --no-audit --no-fund $(WEB_NPM)
	@echo $(WEB_NPM) > $@

# the benchmark: builds what it needs, never fails on a slow number
bench: deps ort
	@$(MAKE) --no-print-directory all
	@$(PY) bench/run.py
	@$(PY) bench/mpi_scaling.py
	@$(PY) bench/silero_bench.py || echo "bench/silero_bench.py: Silero VAD not measured (see above)"
	@$(PY) bench/wasm_bench.py || echo "bench/wasm_bench.py: WebAssembly not measured (see above)"

# ---- install, uninstall ---------------------------------------------------
# A fixed layout under PREFIX (cellc finds its runtime through
# PREFIX/lib/pkgconfig, from where bin/cellc lies); uninstall removes the
# files of INSTALLED and then the directories of INSTALL_DIRS left empty.
DEST := $(DESTDIR)$(PREFIX)
SOLIBS := libcellrt.so libcellrt.so.$(SOMAJOR) libcellrt.so.$(CELLC_VER) \
	libcellrt-noblas.so libcellrt-noblas.so.$(SOMAJOR) libcellrt-noblas.so.$(CELLC_VER)
INSTALLED := $(DEST)/bin/cellc $(DEST)/include/cellrt.h \
	$(DEST)/lib/libcellrt.a $(DEST)/lib/libcellrt-noblas.a $(SOLIBS:%=$(DEST)/lib/%) \
	$(DEST)/lib/pkgconfig/cellrt.pc $(DEST)/lib/pkgconfig/cellrt-noblas.pc \
	$(DESTDIR)$(MANDIR)/man1/cellc.1 $(DESTDIR)$(MANDIR)/man5/cellc-cell.5
INSTALL_DIRS := $(DEST)/lib/pkgconfig $(DEST)/lib $(DEST)/include $(DEST)/bin \
	$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR) $(DEST)/share

install: $(B)/cellc $(B)/libcellrt.a $(B)/libcellrt.so $(NB)/libcellrt.a $(NB)/libcellrt-noblas.so
	install -d $(DEST)/bin $(DEST)/lib/pkgconfig $(DEST)/include \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(B)/cellc $(DEST)/bin/cellc
	install -m 644 runtime/cellrt.h $(DEST)/include/cellrt.h
	install -m 644 $(B)/libcellrt.a $(DEST)/lib/libcellrt.a
	install -m 644 $(NB)/libcellrt.a $(DEST)/lib/libcellrt-noblas.a
	install -m 755 $(B)/libcellrt.so.$(CELLC_VER) $(NB)/libcellrt-noblas.so.$(CELLC_VER) $(DEST)/lib/
	for l in libcellrt libcellrt-noblas; do \
	  ln -sf $$l.so.$(CELLC_VER) $(DEST)/lib/$$l.so.$(SOMAJOR) && \
	  ln -sf $$l.so.$(CELLC_VER) $(DEST)/lib/$$l.so || exit 1; done
	$(call pcfile,cellrt,cellrt,OpenBLAS build,-lopenblas -lm,$(PREFIX),$${prefix}/lib,$${prefix}/include) > $(DEST)/lib/pkgconfig/cellrt.pc
	$(call pcfile,cellrt-noblas,cellrt-noblas,portable kernels without BLAS,-lm,$(PREFIX),$${prefix}/lib,$${prefix}/include) > $(DEST)/lib/pkgconfig/cellrt-noblas.pc
	install -m 644 man/cellc.1 $(DESTDIR)$(MANDIR)/man1/cellc.1
	install -m 644 man/cellc-cell.5 $(DESTDIR)$(MANDIR)/man5/cellc-cell.5

uninstall:
	rm -f $(INSTALLED)
	for d in $(INSTALL_DIRS); do [ ! -d $$d ] || rmdir --ignore-fail-on-non-empty $$d; done

clean:
	rm -rf $(B) $(SAN) tests/out
