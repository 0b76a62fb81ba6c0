# mpiadvise: top-level build.
#   make            build/lib/libmpiadvise.so, build/bin/mpiadvise
#   make check      every test; ends with "tests: N passed, M failed"
#   make demo       install what is missing, build, trace an example, print its report
#   make bench      tracer overhead and log size, measured side by side (asserts nothing)
#   make install PREFIX=/usr/local

PREFIX    ?= /usr/local
# SANITIZE=address,undefined (or thread): the analyzer, the command and the tests built with those
# sanitizers, in their own build directory. The tracing library stays uninstrumented there (it is
# preloaded into MPI jobs, where a sanitizer runtime must come first); `make check-tracer-sanitize` runs
# it instrumented.
SANITIZE  ?=
comma     := ,
BUILD     ?= $(if $(SANITIZE),build-san-$(subst $(comma),-,$(SANITIZE)),build)
MPICC     ?= mpicc
CXX       ?= g++
PYTHON    ?= python3

CFLAGS    ?= -O2 -g
CXXFLAGS  ?= -O2 -g
WARN_C    := -Wall -Wextra -Wno-unused-parameter
WARN_CXX  := -Wall -Wextra
# WERROR=1 (CI): warnings are errors, with g++ and with clang++ (make CXX=clang++ OMPI_CC=clang ...)
ifneq ($(WERROR),)
WARN_C    += -Werror
WARN_CXX  += -Werror
endif
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS := $(SAN_FLAGS)
endif

MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null || $(MPICC) -compile-info 2>/dev/null | cut -d' ' -f2-)

TRACE_SRC := libtrace/core.c libtrace/buffers.c libtrace/comm.c libtrace/callsite.c \
             libtrace/metadata.c libtrace/papi.c libtrace/support.c libtrace/clock.c
TRACE_GEN := $(BUILD)/gen/wrappers.c $(BUILD)/gen/call_ids.h
TRACE_OBJ := $(patsubst libtrace/%.c,$(BUILD)/obj/libtrace/%.o,$(TRACE_SRC)) $(BUILD)/obj/libtrace/wrappers.o
TRACE_LIB := $(BUILD)/lib/libmpiadvise.so

ANALYZER_SRC := $(wildcard analyzer/*.cpp)
# the event codec's decoder (libtrace/codec.c) is C, shared with the tracer's encoder (codec.h)
ANALYZER_OBJ := $(patsubst analyzer/%.cpp,$(BUILD)/obj/analyzer/%.o,$(ANALYZER_SRC)) $(BUILD)/obj/analyzer/codec.o
ANALYZER_LIB := $(BUILD)/lib/libmpiadvise-analyzer.a

CLI_SRC := $(wildcard cli/*.cpp)
CALIBRATE_BENCH := $(BUILD)/bin/mpiadvise-calibrate-bench
CLI_OBJ := $(patsubst cli/%.cpp,$(BUILD)/obj/cli/%.o,$(CLI_SRC))
CLI_BIN := $(BUILD)/bin/mpiadvise

CXX_INC  := -Ianalyzer -Ilibtrace -I$(BUILD)/gen
CXX_LIBS := -lzstd -lfmt -ldw -lelf -ltomlplusplus

all: $(TRACE_LIB) $(CLI_BIN) $(CALIBRATE_BENCH) examples

# ---- libtrace: the LD_PRELOAD library ------------------------------------------------------------------
$(BUILD)/gen/wrappers.c $(BUILD)/gen/call_ids.h: libtrace/calls.py libtrace/gen_wrappers.py
	@mkdir -p $(BUILD)/gen
	$(PYTHON) libtrace/gen_wrappers.py $(BUILD)/gen

$(BUILD)/obj/libtrace/%.o: libtrace/%.c $(wildcard libtrace/*.h) $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=gnu11 $(CFLAGS) $(WARN_C) -fPIC -fvisibility=default -Ilibtrace -I$(BUILD)/gen -c $< -o $@

$(BUILD)/obj/libtrace/wrappers.o: $(BUILD)/gen/wrappers.c $(wildcard libtrace/*.h)
	@mkdir -p $(dir $@)
	$(MPICC) -std=gnu11 $(CFLAGS) $(WARN_C) -Wno-unused-variable -Wno-unused-but-set-variable -fPIC \
	  -Ilibtrace -I$(BUILD)/gen -c $< -o $@

$(TRACE_LIB): $(TRACE_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) -shared -o $@ $(TRACE_OBJ) -lzstd -lunwind -lpapi -ldl -lpthread

# ---- analyzer: the offline library -----------------------------------------------------------------------
$(BUILD)/obj/analyzer/codec.o: libtrace/codec.c libtrace/codec.h libtrace/format.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) $(SAN_FLAGS) $(WARN_C) -Ilibtrace -c $< -o $@

$(BUILD)/obj/analyzer/%.o: analyzer/%.cpp $(wildcard analyzer/*.hpp) libtrace/format.h libtrace/codec.h $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(CXXFLAGS) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -DMPIADVISE_PREFIX='"$(PREFIX)"' -c $< -o $@

$(ANALYZER_LIB): $(ANALYZER_OBJ)
	@mkdir -p $(dir $@)
	ar rcs $@ $^

# ---- cli: the mpiadvise command ----------------------------------------------------------------------------
$(BUILD)/obj/cli/%.o: cli/%.cpp $(wildcard cli/*.hpp) $(wildcard analyzer/*.hpp) $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(CXXFLAGS) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -Icli -DMPIADVISE_PREFIX='"$(PREFIX)"' -c $< -o $@

$(CLI_BIN): $(CLI_OBJ) $(ANALYZER_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SAN_LDFLAGS) -o $@ $(CLI_OBJ) $(ANALYZER_LIB) $(CXX_LIBS)

$(CALIBRATE_BENCH): cli/calibrate_bench.c
	@mkdir -p $(dir $@)
	$(MPICC) -O2 -g $(WARN_C) -o $@ $<

# ---- examples ----------------------------------------------------------------------------------------------
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c examples/compute.h
	@mkdir -p $(dir $@)
	$(MPICC) -O2 -g -o $@ $< -lm

# ---- tests -------------------------------------------------------------------------------------------------
include tests/tests.mk

# ---- demo, bench, install ----------------------------------------------------------------------------------
demo:
	@./scripts/demo.sh

# the tracing library built with ThreadSanitizer, then ASan+UBSan, inside a traced MPI_THREAD_MULTIPLE job
check-tracer-sanitize: $(TRACE_GEN) $(TEST_DIR)/programs/threads
	@MPICC=$(MPICC) ./scripts/check-tracer-sanitize.sh $(BUILD)

bench: all
	@./bench/run.sh
	@./bench/gate.sh

# the replay against real runs of real MPI codes (PETSc, MEEP, our examples): a table, no assertions
validate: all
	@./bench/validate.py

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/mpiadvise/params
	install -m 755 $(TRACE_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(CLI_BIN) $(CALIBRATE_BENCH) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 share/params/*.toml $(DESTDIR)$(PREFIX)/share/mpiadvise/params/
	install -d $(DESTDIR)$(PREFIX)/share/mpiadvise/ci
	install -m 755 docs/ci/mpi-gate.sh $(DESTDIR)$(PREFIX)/share/mpiadvise/ci/
	install -m 644 docs/ci/gitlab-ci.yml docs/ci/github-actions.yml $(DESTDIR)$(PREFIX)/share/mpiadvise/ci/

clean:
	rm -rf $(BUILD)

.PHONY: all examples check check-tracer-sanitize demo bench validate install clean
