# mpiadvise: top-level build.
#   make            build/bin/mpiadvise, and for every MPI found (Open MPI, MPICH) its tracing library
#                   build/lib/mpiadvise/MPI/libmpiadvise.so, calibration benchmark and examples
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
# The analyzer's code aligned: the replay's speed swung by a third with where its hot loops and branches
# fell, from one build to the next of code the replay of point-to-point calls does not run (make bench
# (d), the simulation of a ring: 14 to 19 M events/s without, 19.3 to 21.3 with, over three versions of
# analyzer/replay.cpp). clang has no -falign-jumps.
ALIGN_CXX := -falign-functions=64 -falign-loops=32 $(if $(findstring clang,$(notdir $(CXX))),,-falign-jumps=32)
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS := $(SAN_FLAGS)
endif

# ---- the MPIs: one tracing library per MPI, built side by side -----------------------------------------
# A library built against one MPI cannot trace a job of another (Open MPI's handles are pointers, MPICH's
# ints; its libmpi would be loaded beside the job's). MPIS lists the MPIs to build for, each with its
# compiler wrappers MPICC_<mpi>, MPICXX_<mpi>, MPIF90_<mpi> and launcher MPIRUN_<mpi>: by default every
# MPI whose Debian-named wrappers (mpicc.openmpi, mpicc.mpich) are found, Open MPI first; with neither,
# the one plain mpicc is. The first of MPIS is the default: build/lib/libmpiadvise.so and build/examples
# are links to its builds.
have = $(shell command -v $(1) 2>/dev/null)
MPICC_openmpi  ?= mpicc.openmpi
MPICXX_openmpi ?= mpicxx.openmpi
MPIF90_openmpi ?= mpif90.openmpi
MPIRUN_openmpi ?= mpirun.openmpi
MPICC_mpich    ?= mpicc.mpich
MPICXX_mpich   ?= mpicxx.mpich
MPIF90_mpich   ?= mpif90.mpich
MPIRUN_mpich   ?= mpirun.mpich
ifeq ($(origin MPIS),undefined)
MPIS := $(strip $(if $(call have,$(MPICC_openmpi)),openmpi) $(if $(call have,$(MPICC_mpich)),mpich))
ifeq ($(MPIS),)
MPIS := $(shell mpicc -showme:version >/dev/null 2>&1 && echo openmpi || echo mpich)
MPICC_$(MPIS) := mpicc
MPICXX_$(MPIS) := mpicxx
MPIF90_$(MPIS) := mpif90
MPIRUN_$(MPIS) := mpirun
endif
endif
MPI_DEFAULT := $(firstword $(MPIS))

TRACE_SRC := libtrace/core.c libtrace/buffers.c libtrace/comm.c libtrace/callsite.c \
             libtrace/metadata.c libtrace/papi.c libtrace/support.c libtrace/clock.c \
             libtrace/probe.c
TRACE_GEN := $(BUILD)/gen/wrappers.c $(BUILD)/gen/call_ids.h
# per MPI: $(BUILD)/lib/mpiadvise/MPI/{libmpiadvise.so,mpiadvise-calibrate-bench}, $(BUILD)/MPI/examples
mpi_libdir  = $(BUILD)/lib/mpiadvise/$(1)
TRACE_LIBS := $(foreach m,$(MPIS),$(call mpi_libdir,$(m))/libmpiadvise.so)
CALIBRATE_BENCHES := $(foreach m,$(MPIS),$(call mpi_libdir,$(m))/mpiadvise-calibrate-bench)
EXAMPLE_NAMES := $(patsubst examples/%.c,%,$(wildcard examples/*.c))
EXAMPLES := $(foreach m,$(MPIS),$(addprefix $(BUILD)/$(m)/examples/,$(EXAMPLE_NAMES)))

ANALYZER_SRC := $(wildcard analyzer/*.cpp)
# the event codec's decoder (libtrace/codec.c) is C, shared with the tracer's encoder (codec.h)
ANALYZER_OBJ := $(patsubst analyzer/%.cpp,$(BUILD)/obj/analyzer/%.o,$(ANALYZER_SRC)) $(BUILD)/obj/analyzer/codec.o
ANALYZER_LIB := $(BUILD)/lib/libmpiadvise-analyzer.a

# cli/mpi_peers.cpp is MPI's: only in the command built against each MPI (below)
CLI_SRC := $(filter-out cli/mpi_peers.cpp,$(wildcard cli/*.cpp))
CLI_OBJ := $(patsubst cli/%.cpp,$(BUILD)/obj/cli/%.o,$(CLI_SRC)) $(BUILD)/obj/cli/html_assets.o
# what report --format html inlines into its page: Chart.js as Debian packages it (libjs-chart.js), the
# page's script and style; each a NUL-terminated string in the command (mpa_chartjs, mpa_report_js, ...)
CHARTJS ?= /usr/share/javascript/chart.js/chart.min.js
CLI_BIN := $(BUILD)/bin/mpiadvise
# per MPI: the command built against it, which `mpirun -np K mpiadvise report ...` runs in the command's
# place to spread the replay over the K processes (cli/spread.hpp)
SPREAD_BINS := $(foreach m,$(MPIS),$(call mpi_libdir,$(m))/mpiadvise-mpi)

# mpiadvise-synth: the logs of large synthetic runs, written as the tracer writes them (bench/synth.cpp)
SYNTH_BIN := $(BUILD)/bin/mpiadvise-synth

CXX_INC  := -Ianalyzer -Ilibtrace -I$(BUILD)/gen
CXX_LIBS := -lzstd -lfmt -ldw -lelf -ltomlplusplus -lotf2

all: $(TRACE_LIBS) $(CLI_BIN) $(SPREAD_BINS) $(SYNTH_BIN) $(CALIBRATE_BENCHES) examples default-links

# the default MPI's builds where a single-MPI layout had them
default-links: $(TRACE_LIBS) $(EXAMPLES)
	@ln -sfn mpiadvise/$(MPI_DEFAULT)/libmpiadvise.so $(BUILD)/lib/libmpiadvise.so
	@if [ -e $(BUILD)/examples ] && [ ! -L $(BUILD)/examples ]; then rm -rf $(BUILD)/examples; fi
	@ln -sfn $(MPI_DEFAULT)/examples $(BUILD)/examples

# ---- libtrace: the LD_PRELOAD library ------------------------------------------------------------------
$(BUILD)/gen/wrappers.c $(BUILD)/gen/call_ids.h: libtrace/calls.py libtrace/gen_wrappers.py
	@mkdir -p $(BUILD)/gen
	$(PYTHON) libtrace/gen_wrappers.py $(BUILD)/gen

# PAPI is loaded by the tracing library only when counters are asked for (libtrace/papi.c): by the name
# the linker would have recorded
PAPI_SONAME := $(or $(shell objdump -p $$($(CC) -print-file-name=libpapi.so) 2>/dev/null | awk '/SONAME/{print $$2}'),libpapi.so)
# and libunwind only for call sites deeper than the return address (libtrace/callsite.c)
UNWIND_SONAME := $(or $(shell objdump -p $$($(CC) -print-file-name=libunwind.so) 2>/dev/null | awk '/SONAME/{print $$2}'),libunwind.so.8)

# the rules of one MPI ($(1)): its tracing library, calibration benchmark and examples
define MPI_RULES
$(BUILD)/obj/libtrace/$(1)/%.o: libtrace/%.c $(wildcard libtrace/*.h) $(BUILD)/gen/call_ids.h
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -std=gnu11 $(CFLAGS) $(WARN_C) -fPIC -fvisibility=hidden -Ilibtrace -I$(BUILD)/gen \
	  -DMPA_PAPI_SONAME='"$(PAPI_SONAME)"' -DMPA_UNWIND_SONAME='"$(UNWIND_SONAME)"' -c $$< -o $$@

$(BUILD)/obj/libtrace/$(1)/wrappers.o: $(BUILD)/gen/wrappers.c $(wildcard libtrace/*.h)
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -std=gnu11 $(CFLAGS) $(WARN_C) -Wno-unused-variable -Wno-unused-but-set-variable -fPIC \
	  -fvisibility=hidden -Ilibtrace -I$(BUILD)/gen -c $$< -o $$@

$(call mpi_libdir,$(1))/libmpiadvise.so: $(patsubst libtrace/%.c,$(BUILD)/obj/libtrace/$(1)/%.o,$(TRACE_SRC)) \
                                         $(BUILD)/obj/libtrace/$(1)/wrappers.o
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -shared -o $$@ $$^ -lzstd -ldl -lpthread

$(call mpi_libdir,$(1))/mpiadvise-calibrate-bench: cli/calibrate_bench.c libtrace/sent_data.h
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O2 -g $(WARN_C) -Ilibtrace -o $$@ $$<

$(BUILD)/$(1)/examples/%: examples/%.c examples/compute.h
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O2 -g -o $$@ $$< -lm

$(BUILD)/obj/cli/$(1)/%.o: cli/%.cpp $(wildcard cli/*.hpp) $(wildcard analyzer/*.hpp) $(BUILD)/gen/call_ids.h
	@mkdir -p $$(dir $$@)
	$(MPICXX_$(1)) -std=c++20 $(CXXFLAGS) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -Icli -DMPIADVISE_WITH_MPI \
	  -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX \
	  -DMPIADVISE_PREFIX='"$(PREFIX)"' -c $$< -o $$@

$(call mpi_libdir,$(1))/mpiadvise-mpi: $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ)) $(BUILD)/obj/cli/$(1)/main.o \
                                       $(BUILD)/obj/cli/$(1)/mpi_peers.o $(ANALYZER_LIB)
	@mkdir -p $$(dir $$@)
	$(MPICXX_$(1)) $(SAN_LDFLAGS) -o $$@ $$^ $(CXX_LIBS)
endef
$(foreach m,$(MPIS),$(eval $(call MPI_RULES,$(m))))

# ---- analyzer: the offline library -----------------------------------------------------------------------
$(BUILD)/obj/analyzer/codec.o: libtrace/codec.c libtrace/codec.h libtrace/format.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) $(SAN_FLAGS) $(WARN_C) -Ilibtrace -c $< -o $@

$(BUILD)/obj/analyzer/%.o: analyzer/%.cpp $(wildcard analyzer/*.hpp) libtrace/format.h libtrace/codec.h $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(CXXFLAGS) $(ALIGN_CXX) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -DMPIADVISE_PREFIX='"$(PREFIX)"' -c $< -o $@

$(ANALYZER_LIB): $(ANALYZER_OBJ)
	@mkdir -p $(dir $@)
	ar rcs $@ $^

# ---- cli: the mpiadvise command ----------------------------------------------------------------------------
$(BUILD)/obj/cli/%.o: cli/%.cpp $(wildcard cli/*.hpp) $(wildcard analyzer/*.hpp) $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(CXXFLAGS) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -Icli -DMPIADVISE_PREFIX='"$(PREFIX)"' -c $< -o $@

$(BUILD)/obj/cli/html_assets.o: $(wildcard $(CHARTJS)) cli/html/report.js cli/html/report.css
	@mkdir -p $(dir $@) $(BUILD)/gen
	@test -r $(CHARTJS) || { echo "mpiadvise: $(CHARTJS) is missing: install libjs-chart.js (scripts/deps.sh)"; exit 1; }
	@{ for a in chartjs:$(CHARTJS) report_js:cli/html/report.js report_css:cli/html/report.css; do \
	    n=$${a%%:*}; f=$$(realpath $${a#*:}); \
	    printf '.section .rodata\n.global mpa_%s\n.type mpa_%s,@object\nmpa_%s:\n.incbin "%s"\n.byte 0\n' $$n $$n $$n "$$f"; \
	  done; printf '.section .note.GNU-stack,"",@progbits\n'; } > $(BUILD)/gen/html_assets.s
	$(CC) -c $(BUILD)/gen/html_assets.s -o $@

$(CLI_BIN): $(CLI_OBJ) $(ANALYZER_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SAN_LDFLAGS) -o $@ $(CLI_OBJ) $(ANALYZER_LIB) $(CXX_LIBS)

# ---- mpiadvise-synth: its events encoded by the tracer's own encoder (codec.h), in chunks as libtrace writes them
$(BUILD)/obj/bench/synth.o: bench/synth.cpp libtrace/format.h libtrace/codec.h $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(CXXFLAGS) $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -c $< -o $@

$(SYNTH_BIN): $(BUILD)/obj/bench/synth.o $(BUILD)/obj/analyzer/codec.o
	@mkdir -p $(dir $@)
	$(CXX) $(SAN_LDFLAGS) -o $@ $^ -lzstd -lfmt -lpthread

# ---- examples ----------------------------------------------------------------------------------------------
examples: $(EXAMPLES)

# ---- tests -------------------------------------------------------------------------------------------------
include tests/tests.mk

# ---- demo, bench, install ----------------------------------------------------------------------------------
demo:
	@./scripts/demo.sh

# the tracing library built with ThreadSanitizer, then ASan+UBSan, inside a traced MPI_THREAD_MULTIPLE job
check-tracer-sanitize: $(TRACE_GEN) $(TEST_DIR)/programs/$(MPI_DEFAULT)/threads
	@MPICC=$(MPICC_$(MPI_DEFAULT)) ./scripts/check-tracer-sanitize.sh $(BUILD) $(TEST_DIR)/programs/$(MPI_DEFAULT)/threads

# the tracer's overhead under each MPI built (the replay's throughput once, with the first)
bench: all
	@$(foreach m,$(MPIS),BENCH_MPI=$(m) MPICC="$(MPICC_$(m))" MPICXX="$(MPICXX_$(m))" MPIRUN="$(MPIRUN_$(m))" \
	  BENCH_REPLAY=$(if $(filter $(m),$(MPI_DEFAULT)),1,0) ./bench/run.sh && echo &&) true
	@./bench/gate.sh
	@echo && ./bench/report_html.py

# the replay against real runs of real MPI codes (PETSc, MEEP, our examples): a table, no assertions
validate: all
	@./bench/validate.py

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/mpiadvise/params
	for m in $(MPIS); do \
	  install -d $(DESTDIR)$(PREFIX)/lib/mpiadvise/$$m && \
	  install -m 755 $(BUILD)/lib/mpiadvise/$$m/libmpiadvise.so $(BUILD)/lib/mpiadvise/$$m/mpiadvise-calibrate-bench \
	    $(BUILD)/lib/mpiadvise/$$m/mpiadvise-mpi \
	    $(DESTDIR)$(PREFIX)/lib/mpiadvise/$$m/ || exit 1; \
	done
	ln -sfn mpiadvise/$(MPI_DEFAULT)/libmpiadvise.so $(DESTDIR)$(PREFIX)/lib/libmpiadvise.so
	install -m 755 $(CLI_BIN) $(SYNTH_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 share/params/*.toml $(DESTDIR)$(PREFIX)/share/mpiadvise/params/
	install -d $(DESTDIR)$(PREFIX)/share/mpiadvise/ci
	install -m 755 docs/ci/mpi-gate.sh $(DESTDIR)$(PREFIX)/share/mpiadvise/ci/
	install -m 644 docs/ci/gitlab-ci.yml docs/ci/github-actions.yml $(DESTDIR)$(PREFIX)/share/mpiadvise/ci/

clean:
	rm -rf $(BUILD)

.PHONY: all default-links examples check check-tracer-sanitize demo bench validate install clean
