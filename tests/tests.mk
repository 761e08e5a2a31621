# tests.mk: the test parts of the build, included by the top Makefile.
#
#   make fixtures      generate the golden data under tests/out/ (only what
#                      is missing or whose generator changed)
#   make fixtures-quick  the same for the groups of `make check-quick` only
#   make unit-tests    build the Check unit tests (normal and sanitizer builds)
#   make ir-test [CASE=PASS/NAME]   the IR text tests of tests/ir/ (all, or
#                      one case): `cellc dump --after PASS` against expected.txt
#   make ir-update [CASE=PASS/NAME] rewrite their expected.txt from the dump;
#                      review the diff (git diff tests/ir) before committing
#
# Every fixture directory holds its own stamp, written last: a directory that
# was deleted, or whose generation failed half-way, has no stamp and is made
# again.  The generators take their oracles from outside cellc (onnx's own
# test generator, tests/ref_rnn.py, PyTorch) and fixed seeds.  Their output
# is never committed: CI regenerates it.

TOUT := tests/out
# the committed 784-step traces, one archive per model (see below)
TRACE_LONG := $(wildcard tests/fixtures/trace_long/*.tar.xz)

FIXTURES := $(TOUT)/onnx_node/.stamp $(TOUT)/rnn_cases/.stamp \
	$(TOUT)/torch/.stamp $(TOUT)/quant/.stamp $(TOUT)/bad/.stamp $(TOUT)/api/.stamp \
	$(TOUT)/deploy/.stamp \
	$(TOUT)/loop/.stamp \
	$(TOUT)/cells/.stamp \
	$(TOUT)/cell_init/.stamp \
	$(TOUT)/trace/.stamp $(if $(TRACE_LONG),$(TOUT)/trace_long/.stamp)

# outputs whose length the data decide (issue 15; harness group datadep)
FIXTURES += $(TOUT)/datadep/.stamp
$(TOUT)/datadep/.stamp: tests/gen_datadep_cases.py
	$(call gen,tests/gen_datadep_cases.py,$(TOUT)/datadep)
# the operators only cellc's passes make (ConvGrad, PadGrad, ClassLossGrad,
# MatrixExp) against PyTorch, for the reference interpreter (group eval_ref)
FIXTURES += $(TOUT)/eval_ops/.stamp
$(TOUT)/eval_ops/.stamp: tests/gen_eval_ops_cases.py
	$(call gen,tests/gen_eval_ops_cases.py,$(TOUT)/eval_ops)
# cellc export (issue 5): PyTorch exports with and without new weights
FIXTURES += $(TOUT)/export/.stamp
$(TOUT)/export/.stamp: tests/gen_export_cases.py tests/gen_torch_exports.py tests/ref_momentum.py tests/tensorfile.py
	$(call gen,tests/gen_export_cases.py,$(TOUT)/export)
FIXTURES += $(TOUT)/grad_smoke/.stamp

.PHONY: fixtures fixtures-quick unit-tests ir-test ir-update
# what harness.py --quick's QUICK_GROUPS read (tests/run.sh --quick)
FIXTURES_QUICK := $(addprefix $(TOUT)/,$(addsuffix /.stamp,onnx_node rnn_cases torch image bad \
	trace trace_forms trace_wild authors torch_wild loop script_wild size_if data_if size_inputs f64 converted datadep cells cell_init api grad_smoke)) \
	$(if $(TRACE_LONG),$(TOUT)/trace_long/.stamp)
fixtures-quick: $(FIXTURES_QUICK)

# $(call gen,GENERATOR,DIR): runs GENERATOR DIR into a fresh DIR, logging to
# tests/out/logs/gen_<dir>.log (shown when it fails), then stamps DIR.
define gen
	@rm -rf $(2) && mkdir -p $(TOUT)/logs
	@echo "generating $(2) ($(1))"
	@$(PY) $(1) $(2) > $(TOUT)/logs/gen_$(notdir $(2)).log 2>&1 \
	  || { cat $(TOUT)/logs/gen_$(notdir $(2)).log >&2; echo "fixture generation failed: $(1)" >&2; exit 1; }
	@touch $(2)/.stamp
endef

$(TOUT)/onnx_node/.stamp: tests/gen_onnx_node_data.py
	$(call gen,tests/gen_onnx_node_data.py,$(TOUT)/onnx_node)
$(TOUT)/rnn_cases/.stamp: tests/gen_rnn_cases.py tests/ref_rnn.py
	$(call gen,tests/gen_rnn_cases.py,$(TOUT)/rnn_cases)
$(TOUT)/torch/.stamp: tests/gen_torch_exports.py
	$(call gen,tests/gen_torch_exports.py,$(TOUT)/torch)
$(TOUT)/quant/.stamp: tests/gen_quant_cases.py
	$(call gen,tests/gen_quant_cases.py,$(TOUT)/quant)
$(TOUT)/api/.stamp: tests/gen_api_cases.py tests/ref_rnn.py
	$(call gen,tests/gen_api_cases.py,$(TOUT)/api)
$(TOUT)/loop/.stamp: tests/gen_loop_cases.py tests/ref_scripted.py tests/ref_momentum.py
	$(call gen,tests/gen_loop_cases.py,$(TOUT)/loop)
$(TOUT)/deploy/.stamp: tests/gen_deploy_cases.py $(TOUT)/torch/.stamp $(TOUT)/trace/.stamp
	$(call gen,tests/gen_deploy_cases.py,$(TOUT)/deploy)
$(TOUT)/trace/.stamp: tests/gen_trace_cases.py tests/ref_momentum.py
	$(call gen,tests/gen_trace_cases.py,$(TOUT)/trace)
# traced loops in other styles (unbind/split/list outputs; issue 4)
FIXTURES += $(TOUT)/trace_forms/.stamp
$(TOUT)/trace_forms/.stamp: tests/gen_trace_forms.py tests/ref_momentum.py
	$(call gen,tests/gen_trace_forms.py,$(TOUT)/trace_forms)
# traced loops written in other people's styles (issue 14; harness group
# trace_wild).  The 784-step exports of `gen_trace_wild.py --long` are not
# made here: they take PyTorch many minutes each.
FIXTURES += $(TOUT)/trace_wild/.stamp
$(TOUT)/trace_wild/.stamp: tests/gen_trace_wild.py tests/golden_io.py
	$(call gen,tests/gen_trace_wild.py,$(TOUT)/trace_wild)
# the MomentumRNN authors' models (issue 46 point 1; harness group authors)
FIXTURES += $(TOUT)/authors/.stamp
$(TOUT)/authors/.stamp: tests/gen_authors.py tests/ref_cells.py tests/golden_io.py
	$(call gen,tests/gen_authors.py,$(TOUT)/authors)
# traced loops in the styles of issue 46: output fed back, per-step
# nn.GRU/nn.LSTM calls, convolutional and element-wise cells, tables, linear
# updates, double precision (harness group loop_styles)
FIXTURES += $(TOUT)/loop_styles/.stamp
$(TOUT)/loop_styles/.stamp: tests/gen_loop_styles.py tests/golden_io.py
	$(call gen,tests/gen_loop_styles.py,$(TOUT)/loop_styles)
# nn.LSTM/GRU/RNN models written in other people's styles (harness group
# torch_wild)
FIXTURES += $(TOUT)/torch_wild/.stamp
$(TOUT)/torch_wild/.stamp: tests/gen_torch_wild.py
	$(call gen,tests/gen_torch_wild.py,$(TOUT)/torch_wild)
# scripted loops written in other people's styles (issue 14 point 3; harness
# group script_wild)
FIXTURES += $(TOUT)/script_wild/.stamp
$(TOUT)/script_wild/.stamp: tests/gen_script_wild.py
	$(call gen,tests/gen_script_wild.py,$(TOUT)/script_wild)
# models as converters write them (issue 45 point 1; harness group converted)
FIXTURES += $(TOUT)/converted/.stamp
$(TOUT)/converted/.stamp: tests/gen_converted.py
	$(call gen,tests/gen_converted.py,$(TOUT)/converted)

# models computing in double precision (issue 45 point 5; harness group f64)
FIXTURES += $(TOUT)/f64/.stamp
$(TOUT)/f64/.stamp: tests/gen_f64.py tests/gen_size_if.py tests/gen_loop_styles.py tests/golden_io.py
	$(call gen,tests/gen_f64.py,$(TOUT)/f64)

# If nodes decided by the data at run time (issue 45 point 3; harness group data_if)
FIXTURES += $(TOUT)/data_if/.stamp
$(TOUT)/data_if/.stamp: tests/gen_data_if.py tests/gen_size_if.py
	$(call gen,tests/gen_data_if.py,$(TOUT)/data_if)

# If nodes decided by a run-time size (issue 45 point 3; harness group size_if)
FIXTURES += $(TOUT)/size_if/.stamp
$(TOUT)/size_if/.stamp: tests/gen_size_if.py
	$(call gen,tests/gen_size_if.py,$(TOUT)/size_if)
# Loops whose trip count is an input's value (issue 45 point 3; harness group size_inputs)
FIXTURES += $(TOUT)/size_inputs/.stamp
$(TOUT)/size_inputs/.stamp: tests/gen_size_inputs.py tests/gen_size_if.py
	$(call gen,tests/gen_size_inputs.py,$(TOUT)/size_inputs)
# image sampling beyond the official tests (harness group image)
FIXTURES += $(TOUT)/image/.stamp
$(TOUT)/image/.stamp: tests/gen_image_cases.py
	$(call gen,tests/gen_image_cases.py,$(TOUT)/image)
# The 784-step traces take PyTorch 3-64 minutes each to export:
# generated once by `gen_trace_cases.py --long DIR [MODEL ...]` and committed
# compressed, tests/fixtures/trace_long/MODEL.tar.xz holding
# MODEL_opset13_T784/ and its short twin; all unpacked here into one directory.
$(TOUT)/trace_long/.stamp: $(TRACE_LONG)
	@rm -rf $(TOUT)/trace_long && mkdir -p $(TOUT)/trace_long
	@for f in $^; do tar -xJf $$f -C $(TOUT)/trace_long || exit 1; done
	@touch $@
$(TOUT)/bad/.stamp: tests/gen_bad_models.py
	$(call gen,tests/gen_bad_models.py,$(TOUT)/bad)
$(TOUT)/cells/.stamp: tests/gen_cell_cases.py tests/ref_cells.py tests/tensorfile.py
	$(call gen,tests/gen_cell_cases.py,$(TOUT)/cells)
# ODE blocks (issue 48; harness group ode)
FIXTURES += $(TOUT)/ode/.stamp
$(TOUT)/ode/.stamp: tests/gen_ode_cases.py tests/tensorfile.py
	$(call gen,tests/gen_ode_cases.py,$(TOUT)/ode)
$(TOUT)/cell_init/.stamp: tests/gen_cell_init_cases.py tests/gen_cell_cases.py tests/ref_cells.py tests/tensorfile.py
	$(call gen,tests/gen_cell_init_cases.py,$(TOUT)/cell_init)

# training (issue 5): gradient cases for the `grad` group (listed in FIXTURES above)
$(TOUT)/grad_smoke/.stamp: tests/gen_grad_smoke.py tests/ref_cells.py tests/tensorfile.py
	$(call gen,tests/gen_grad_smoke.py,$(TOUT)/grad_smoke)

# ---- Check unit tests of libcellrt ------------------------------------------
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

ifeq ($(TARGET),)
# $(call host,PROGRAMS): the host's unit-test programs (none for a TARGET)
host = $(1)
else ifneq ($($(TARGET)_TEST_PKGS),)
host =
# TARGET=NAME (templates/targets.mk): libcellrt's unit tests for that
# target, linked statically with its Check (NAME_TEST_PKGS, a foreign
# architecture's package) so that its emulator runs them as they are
# (the harness group cross_NAME)
unit-tests: $(TB)/tests/test_runtime
$(TB)/tests/test_runtime: tests/unit/test_runtime.c tests/unit/test_kern.h runtime/cellrt.h runtime/rt_kern.h \
		$(TB)/libcellrt.a
	$(call target_tools,$(CC))
	@mkdir -p $(TB)/tests
	$(CC) $(CFLAGS) $(TARGET_CFLAGS) $(TARGET_LDFLAGS) $(WARN) -Iruntime $< -o $@ -static $(TB)/libcellrt.a -lcheck -lsubunit -lrt -pthread $(TARGET_LIBS)
else
host =
# a target that Debian builds no Check for (no NAME_TEST_PKGS): the kernel
# tests of test_runtime.c (tests/unit/test_kern.h) under check_bare.h; on a
# target without an OS (a row with a board: Check does not build there) a
# firmware image for the board's emulator, in WebAssembly a program Node runs
unit-tests: $(TB)/tests/test_kern_bare
$(TB)/tests/test_kern_bare: tests/unit/test_kern_bare.c tests/unit/test_kern.h tests/unit/check_bare.h \
		runtime/cellrt.h runtime/rt_kern.h $(TB)/libcellrt.a $(if $(TARGET_BOARD),$(TB)/$(TARGET_BOARD).o)
	$(call target_tools,$(CC))
	@mkdir -p $(TB)/tests
	$(CC) $(CFLAGS) $(TARGET_CFLAGS) $(TARGET_LDFLAGS) $(WARN) -Iruntime $< -o $@ $(TB)/libcellrt.a $(TARGET_LIBS)
endif

unit-tests: $(call host,$(B)/tests/test_runtime $(SAN)/tests/test_runtime)

$(B)/tests/test_runtime: tests/unit/test_runtime.c tests/unit/test_kern.h runtime/cellrt.h $(B)/libcellrt.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) -Iruntime $(CHECK_CFLAGS) $< -o $@ $(B)/libcellrt.a $(CHECK_LIBS) $(LIBS_RT)
$(SAN)/tests/test_runtime: tests/unit/test_runtime.c tests/unit/test_kern.h runtime/cellrt.h $(SAN)/libcellrt.a
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) -Iruntime $(CHECK_CFLAGS) $< -o $@ $(SAN)/libcellrt.a $(CHECK_LIBS) $(LIBS_RT)

# compiler/passes/mincut.c stands alone (with the arena): its own Check binary
unit-tests: $(call host,$(B)/tests/test_mincut $(SAN)/tests/test_mincut)
$(B)/tests/test_mincut: tests/unit/test_mincut.c compiler/passes/mincut.c compiler/passes/mincut.h compiler/base/arena.c compiler/base/arena.h
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) -Icompiler/passes -Icompiler/base $(CHECK_CFLAGS) $< compiler/passes/mincut.c compiler/base/arena.c -o $@ $(CHECK_LIBS)
$(SAN)/tests/test_mincut: tests/unit/test_mincut.c compiler/passes/mincut.c compiler/passes/mincut.h compiler/base/arena.c compiler/base/arena.h
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) -Icompiler/passes -Icompiler/base $(CHECK_CFLAGS) $< compiler/passes/mincut.c compiler/base/arena.c -o $@ $(CHECK_LIBS)

# ---- training (issue 5): gradient, trajectory and finite-difference cases ----
# Generated by `make fixtures` like the others; the harness groups grad, train
# and fd that use them join the default run once cellc has --train.
GRAD_DEPS := tests/gen_cell_cases.py tests/ref_cells.py tests/ref_momentum.py tests/ref_scripted.py \
	tests/onnx_ref.py tests/ref_rnn.py tests/tensorfile.py
FIXTURES += $(TOUT)/grad/.stamp $(TOUT)/grad_ops/.stamp $(TOUT)/train/.stamp $(TOUT)/optim/.stamp
$(TOUT)/grad/.stamp: tests/gen_grad_cases.py $(GRAD_DEPS)
	$(call gen,tests/gen_grad_cases.py,$(TOUT)/grad)
# issue 15.4: gradients of Conv, the normalisations, reductions, Pad, Where, Min/Max, losses
$(TOUT)/grad_ops/.stamp: tests/gen_grad_ops.py tests/gen_grad_cases.py $(GRAD_DEPS)
	$(call gen,tests/gen_grad_ops.py,$(TOUT)/grad_ops)
$(TOUT)/train/.stamp: tests/gen_train_cases.py tests/gen_grad_cases.py $(GRAD_DEPS)
	$(call gen,tests/gen_train_cases.py,$(TOUT)/train)
# ---- optimisers (issue 5): tests/gen_optim_cases.py + tests/unit/test_optim.c --
$(TOUT)/optim/.stamp: tests/gen_optim_cases.py tests/tensorfile.py
	$(call gen,tests/gen_optim_cases.py,$(TOUT)/optim)
unit-tests: $(call host,$(B)/tests/test_optim $(SAN)/tests/test_optim)
$(B)/tests/test_optim: tests/unit/test_optim.c runtime/cellrt.h $(B)/libcellrt.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) -Iruntime $< -o $@ $(B)/libcellrt.a $(LIBS_RT)
$(SAN)/tests/test_optim: tests/unit/test_optim.c runtime/cellrt.h $(SAN)/libcellrt.a
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) -Iruntime $< -o $@ $(SAN)/libcellrt.a $(LIBS_RT)

# ---- fuzzing (issue 17): libFuzzer targets of every reader of untrusted input ----
#
#   make fuzz        build-fuzz/fuzz_* (clang, libFuzzer, ASan + UBSan, no
#                    recovery) and their seed corpora and dictionaries
#   make fuzz-smoke  each target over its seeds and briefly beyond
#                    (tests/fuzz/run_fuzz.py; the harness group `fuzz`)
#
# The seeds are made from the test fixtures (tests/fuzz/make_corpus.py), so
# `make fuzz` wants the fixtures first; nothing binary is committed.
FZ        := build-fuzz
FUZZ_CC   := clang
FUZZ_SAN  := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_WARN := -std=c11 -Wall -Wextra -Wno-unused-parameter
FUZZ_TARGETS := onnx onnx_train cell bind export tensorfile testdata traindata
FZ_C_OBJ := $(patsubst compiler/%.c,$(FZ)/cc/%.o,$(filter-out compiler/cmd/main.c,$(COMPILER_SRC))) \
	$(FZ)/cc/onnx.pb-c.o $(FZ)/cc/templates.o
FZ_RT_OBJ := $(RUNTIME_SRC:runtime/%.c=$(FZ)/rt/%.o)

$(FZ)/cc/%.o: compiler/%.c $(B)/gen/onnx.pb-c.h $(COMPILER_HDR) runtime/cellrt.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(FUZZ_WARN) $(CPPFLAGS_C) -DCELLC_SHARE='"$(abspath .)"' -c $< -o $@
$(FZ)/cc/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	@mkdir -p $(FZ)/cc
	$(FUZZ_CC) $(FUZZ_SAN) -I$(B)/gen -c $< -o $@
$(FZ)/cc/templates.o: $(B)/gen/templates.c compiler/emit/emit.h
	@mkdir -p $(FZ)/cc
	$(FUZZ_CC) $(FUZZ_SAN) $(FUZZ_WARN) $(CPPFLAGS_C) -c $< -o $@
# Coverage guides the fuzzer only through the runtime's readers of untrusted
# bytes (tensor files, IDX/.npy data, gzip); the numeric kernels (parameter
# initialisation, BLAS, constant folding's kernels) keep ASan and UBSan but
# no coverage counters: their loops do not branch on the input's structure,
# and instrumented they took most of each compile target's time.
FZ_RT_COV := $(FZ)/rt/rt_tensorfile.o $(FZ)/rt/rt_data.o $(FZ)/rt/rt_inflate.o
$(FZ_RT_COV): $(FZ)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h)
	@mkdir -p $(FZ)/rt
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(FUZZ_WARN) -Iruntime -c $< -o $@
$(filter-out $(FZ_RT_COV),$(FZ_RT_OBJ)): $(FZ)/rt/%.o: runtime/%.c runtime/cellrt.h $(wildcard runtime/*.h)
	@mkdir -p $(FZ)/rt
	$(FUZZ_CC) $(FUZZ_SAN) $(FUZZ_WARN) -Iruntime -c $< -o $@
$(FZ)/libfuzzcellc.a: $(FZ_C_OBJ) $(FZ_RT_OBJ)
	rm -f $@ && ar rcs $@ $^

FUZZ_COMPILE := onnx onnx_train cell bind
FUZZ_READERS := tensorfile testdata traindata
$(FUZZ_COMPILE:%=$(FZ)/fuzz_%): $(FZ)/fuzz_%: tests/fuzz/fuzz_compile.c tests/fuzz/fuzz.h $(FZ)/libfuzzcellc.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(FUZZ_WARN) $(CPPFLAGS_C) -DFUZZ_MODE=$* $< -o $@ $(FZ)/libfuzzcellc.a $(LIBS_C)
$(FUZZ_READERS:%=$(FZ)/fuzz_%): $(FZ)/fuzz_%: tests/fuzz/fuzz_readers.c tests/fuzz/fuzz.h $(FZ)/libfuzzcellc.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(FUZZ_WARN) $(CPPFLAGS_C) -DFUZZ_MODE=$* $< -o $@ $(FZ)/libfuzzcellc.a $(LIBS_C)
$(FZ)/fuzz_export: tests/fuzz/fuzz_export.c tests/fuzz/fuzz.h $(FZ)/libfuzzcellc.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(FUZZ_WARN) $(CPPFLAGS_C) $< -o $@ $(FZ)/libfuzzcellc.a $(LIBS_C)

# seed corpora from the fixtures (remade when the script changes)
$(FZ)/corpus/.stamp: tests/fuzz/make_corpus.py $(B)/cellc
	@rm -rf $(FZ)/corpus && mkdir -p $(FZ)/corpus
	$(PY) tests/fuzz/make_corpus.py $(FZ)/corpus
	@touch $@

.PHONY: fuzz fuzz-smoke
fuzz: $(FUZZ_TARGETS:%=$(FZ)/fuzz_%) $(FZ)/corpus/.stamp
fuzz-smoke: fuzz
	$(PY) tests/fuzz/run_fuzz.py smoke

# ---- IR text tests (tests/ir/PASS/CASE; tests/ir_test.py) -------------------
ir-test: $(B)/cellc
	@$(PY) tests/ir_test.py $(B)/cellc check $(CASE)
ir-update: $(B)/cellc
	@$(PY) tests/ir_test.py $(B)/cellc update $(CASE)

# ---- the reference interpreter against the oracles' data (harness group eval_ref) ----
# tests/unit/eval_ref.c links the compiler's objects (all but main.o) as
# build/cellc does, and runs compiler/eval/ir_eval.c on a model's test data.
EVAL_REF_OBJ := $(filter-out $(B)/cc/cmd/main.o,$(C_OBJ))
$(B)/tests/eval_ref: tests/unit/eval_ref.c $(EVAL_REF_OBJ) $(B)/libcellrt.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS_C) $< $(EVAL_REF_OBJ) $(B)/libcellrt.a -o $@ $(LIBS_C)
$(SAN)/tests/eval_ref: tests/unit/eval_ref.c $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) $(CPPFLAGS_C) $< $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a -o $@ $(LIBS_C)

# compiler/ir/ir_sym.c, size expressions and unification (the same objects)
unit-tests: $(call host,$(B)/tests/test_ir_sym $(SAN)/tests/test_ir_sym)
$(B)/tests/test_ir_sym: tests/unit/test_ir_sym.c $(EVAL_REF_OBJ) $(B)/libcellrt.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS_C) $(CHECK_CFLAGS) $< $(EVAL_REF_OBJ) $(B)/libcellrt.a -o $@ $(CHECK_LIBS) $(LIBS_C)
$(SAN)/tests/test_ir_sym: tests/unit/test_ir_sym.c $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) $(CPPFLAGS_C) $(CHECK_CFLAGS) $< $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a -o $@ $(CHECK_LIBS) $(LIBS_C)

# compiler/ir/ir_build.c, the IR rewrite toolkit: its Check binary links the
# compiler's objects as build/cellc does (inference, folding, the arena)
unit-tests: $(call host,$(B)/tests/test_ir_build $(SAN)/tests/test_ir_build)
$(B)/tests/test_ir_build: tests/unit/test_ir_build.c $(EVAL_REF_OBJ) $(B)/libcellrt.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS_C) $(CHECK_CFLAGS) $< $(EVAL_REF_OBJ) $(B)/libcellrt.a -o $@ $(CHECK_LIBS) $(LIBS_C)
$(SAN)/tests/test_ir_build: tests/unit/test_ir_build.c $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a
	@mkdir -p $(SAN)/tests
	$(CC) $(SANFLAGS) $(WARN) $(CPPFLAGS_C) $(CHECK_CFLAGS) $< $(filter-out $(SAN)/cc/cmd/main.o,$(SAN_C_OBJ)) $(SAN)/libcellrt.a -o $@ $(CHECK_LIBS) $(LIBS_C)

# every generated fixture: read at the end, once all of the FIXTURES above
# are listed (a rule's prerequisites are expanded where the rule is read)
fixtures: $(FIXTURES)
