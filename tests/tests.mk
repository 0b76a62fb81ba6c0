# Tests: Catch2 unit tests and integration tests that run real MPI jobs with mpirun.
TEST_DIR      := $(BUILD)/tests
TEST_CXXFLAGS := -std=c++20 -O1 -g $(SAN_FLAGS) $(WARN_CXX) $(CXX_INC) -Itests -DMPA_BUILD_DIR='"$(abspath $(BUILD))"' \
                 -DMPA_SOURCE_DIR='"$(abspath .)"' -DMPA_DEFAULT_MPI='"$(MPI_DEFAULT)"' \
                 -DMPA_MPIRUN_OPENMPI='"$(MPIRUN_openmpi)"' -DMPA_MPIRUN_MPICH='"$(MPIRUN_mpich)"' \
                 -DMPA_MPICC_OPENMPI='"$(MPICC_openmpi)"' -DMPA_MPICC_MPICH='"$(MPICC_mpich)"'
TEST_SUPPORT  := $(TEST_DIR)/obj/catch_main.o $(TEST_DIR)/obj/support.o
UNIT_SRC      := $(wildcard tests/unit_*.cpp)
MPI_SRC       := $(wildcard tests/mpi_*.cpp)
TEST_BINS     := $(patsubst tests/%.cpp,$(TEST_DIR)/%,$(UNIT_SRC) $(MPI_SRC))
# the programs the MPI tests run, built once per MPI in $(TEST_DIR)/programs/MPI
PROGRAM_NAMES := $(patsubst tests/programs/%.c,%,$(wildcard tests/programs/*.c)) \
                 $(patsubst tests/programs/%.f90,%,$(wildcard tests/programs/*.f90)) pipeline_nosym \
                 cxx_stages cxx_stages_split cxx_stages_symtab cxx_stages_dynsym cxx_stages_clang
TEST_PROGRAMS := $(foreach m,$(MPIS),$(addprefix $(TEST_DIR)/programs/$(m)/,$(PROGRAM_NAMES)))

$(TEST_DIR)/obj/%.o: tests/%.cpp tests/support.hpp $(wildcard analyzer/*.hpp) libtrace/format.h libtrace/codec.h $(BUILD)/gen/call_ids.h \
                     $(wildcard tests/fuzz/*.hpp)
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -c $< -o $@

$(TEST_DIR)/%: $(TEST_DIR)/obj/%.o $(TEST_SUPPORT) $(ANALYZER_LIB)
	$(CXX) $(SAN_LDFLAGS) -o $@ $< $(TEST_SUPPORT) $(ANALYZER_LIB) $(CXX_LIBS)

# a C++ program, its MPI calls in namespaced functions, built as distributions ship programs: with -g;
# its debug information split off (into .debuginfo, a name libdw does not look for: the tests put it in
# a build-id tree) and stripped; stripped of debug information only (.symtab kept); exported with
# -rdynamic and stripped of everything but .dynsym; built by clang (DWARF 5 and no .debug_aranges, which
# gcc writes and libdw 0.188 needs to find a line by address). pipeline_nosym: an example built without debug
# information and stripped (the report falls back to module+offset). clash: linked with -rdynamic, its
# functions named as the tracer's are in its dynamic symbol table. cancel_send: linked with -rdynamic, its
# PMPI_Test_cancelled answers the tracer's calls.
CXX_PROGRAM_FLAGS := -O1 -g -Iexamples -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX
define MPI_TEST_RULES
$(TEST_DIR)/programs/$(1)/%: tests/programs/%.c examples/compute.h
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O1 -g -Iexamples -o $$@ $$< -lpthread

$(TEST_DIR)/programs/$(1)/%: tests/programs/%.f90 $(wildcard tests/programs/*.inc)
	@mkdir -p $$(dir $$@)
	$(MPIF90_$(1)) -O1 -g -o $$@ $$< -J $(TEST_DIR)/programs/$(1)

$(TEST_DIR)/programs/$(1)/clash: tests/programs/clash.c
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O1 -g -rdynamic -o $$@ $$<

$(TEST_DIR)/programs/$(1)/cancel_send: tests/programs/cancel_send.c
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O1 -g -rdynamic -o $$@ $$< -ldl

$(TEST_DIR)/programs/$(1)/pipeline_nosym: examples/pipeline.c examples/compute.h
	@mkdir -p $$(dir $$@)
	$(MPICC_$(1)) -O1 -s -o $$@ $$<

$(TEST_DIR)/programs/$(1)/cxx_stages: tests/programs/cxx_stages.cpp examples/compute.h
	@mkdir -p $$(dir $$@)
	$(MPICXX_$(1)) $(CXX_PROGRAM_FLAGS) -o $$@ $$<
$(TEST_DIR)/programs/$(1)/cxx_stages_clang: tests/programs/cxx_stages.cpp examples/compute.h
	@mkdir -p $$(dir $$@)
	OMPI_CXX=clang++ MPICH_CXX=clang++ $(MPICXX_$(1)) $(CXX_PROGRAM_FLAGS) -o $$@ $$<
$(TEST_DIR)/programs/$(1)/cxx_stages_split: $(TEST_DIR)/programs/$(1)/cxx_stages
	objcopy --only-keep-debug $$< $$@.debuginfo
	strip --strip-all -o $$@ $$<
$(TEST_DIR)/programs/$(1)/cxx_stages_symtab: $(TEST_DIR)/programs/$(1)/cxx_stages
	strip --strip-debug -o $$@ $$<
$(TEST_DIR)/programs/$(1)/cxx_stages_dynsym: tests/programs/cxx_stages.cpp examples/compute.h
	@mkdir -p $$(dir $$@)
	$(MPICXX_$(1)) $(CXX_PROGRAM_FLAGS) -rdynamic -o $$@.full $$<
	strip --strip-all -o $$@ $$@.full
	rm -f $$@.full
endef
$(foreach m,$(MPIS),$(eval $(call MPI_TEST_RULES,$(m))))

tests: all $(TEST_BINS) $(TEST_PROGRAMS)

# every test; the MPI tests once under each MPI of MPIS, one at a time, after the tests that need no MPI,
# run two programs at a time (MPA_TEST_JOBS=1 for one)
check: tests
	@MPA_TEST_JOBS=$${MPA_TEST_JOBS:-2} MPA_TEST_MPIS="$(MPIS)" tests/run_tests.sh $(TEST_BINS)

# every test that needs no MPI (the codec, the reader on the committed fixtures in tests/fixtures, the
# model, the replay, the report's parts): no mpirun, well under a minute
UNIT_BINS := $(patsubst tests/%.cpp,$(TEST_DIR)/%,$(UNIT_SRC))
unit: $(CLI_BIN) $(SYNTH_BIN) $(UNIT_BINS)
	@tests/run_tests.sh $(UNIT_BINS)

# the MPI tests' sources compiled for their warnings alone (-fsyntax-only), and the tests that need no MPI
# built: what a build that runs only `make unit` needs (CI's sanitized clang build)
MPI_SYNTAX := $(patsubst tests/%.cpp,$(TEST_DIR)/syntax/%.ok,$(MPI_SRC))
$(TEST_DIR)/syntax/%.ok: tests/%.cpp tests/support.hpp $(wildcard analyzer/*.hpp) libtrace/format.h libtrace/codec.h \
                         $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -fsyntax-only $<
	@touch $@
# (after UNIT_BINS: a rule's prerequisites are expanded where it is read)
unit-tests: all $(UNIT_BINS) $(MPI_SYNTAX)

.PRECIOUS: $(TEST_DIR)/obj/%.o
.PHONY: tests unit unit-tests

# ---- fuzzing (libFuzzer with clang): the log reader on whole files, the header parser, the whole analysis of a
# job's logs (the report's: matching, replay, waits, advice, gate figures, charts), and a report file as the gate
# reads one ---------------------------------------------------------------------------------------------------------
# make fuzz-smoke runs each target for FUZZ_SECONDS (60) from the committed seeds in tests/fuzz/corpus, after
# every committed regression input in tests/fuzz/regressions; new inputs go to $(BUILD)/fuzz/corpus-*.
FUZZ_CXX      ?= clang++
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_TARGETS  := log_reader header analysis report
FUZZ_READER   := analyzer/log_reader.cpp analyzer/log_events.cpp analyzer/log_header.cpp analyzer/request_table.cpp \
                 analyzer/text_escape.cpp
# the analysis's and the report's targets: every analyzer source, built for the fuzzer; with FUZZ_SHARE=1,
# the objects of this build instead, made with the sanitizers and -fsanitize=fuzzer-no-link in CXXFLAGS
# (CI's clang build: the analyzer compiled once for its sanitized tests and for fuzzing)
ifeq ($(FUZZ_SHARE),)
FUZZ_ANALYZER := $(patsubst analyzer/%.cpp,$(FUZZ_DIR)/analyzer/%.o,$(ANALYZER_SRC))
else
ifeq ($(and $(findstring fuzzer-no-link,$(CXXFLAGS)),$(findstring address,$(SANITIZE))),)
$(error FUZZ_SHARE=1 fuzzes this build's analyzer objects: build them with SANITIZE=address,undefined and -fsanitize=fuzzer-no-link in CXXFLAGS)
endif
FUZZ_ANALYZER := $(patsubst analyzer/%.cpp,$(BUILD)/obj/analyzer/%.o,$(ANALYZER_SRC))
endif
FUZZ_WHOLE    := $(FUZZ_DIR)/fuzz_analysis $(FUZZ_DIR)/fuzz_report

$(FUZZ_DIR)/codec.o: libtrace/codec.c libtrace/codec.h libtrace/format.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) -Ilibtrace -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.cpp tests/fuzz/targets.hpp tests/fuzz/log_mutator.hpp $(FUZZ_READER) \
                    $(wildcard analyzer/*.hpp) $(FUZZ_DIR)/codec.o $(BUILD)/gen/call_ids.h
	$(FUZZ_CXX) -std=c++20 -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) $(CXX_INC) -Itests/fuzz -DMPA_FUZZ_READER_ONLY $< \
	  $(FUZZ_READER) $(FUZZ_DIR)/codec.o -lzstd -lfmt -o $@

$(FUZZ_DIR)/analyzer/%.o: analyzer/%.cpp $(wildcard analyzer/*.hpp) libtrace/format.h libtrace/codec.h $(BUILD)/gen/call_ids.h
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) -std=c++20 -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(CXX_INC) -c $< -o $@

$(FUZZ_WHOLE): $(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.cpp tests/fuzz/targets.hpp tests/fuzz/log_mutator.hpp \
                                   $(FUZZ_ANALYZER) $(FUZZ_DIR)/codec.o
	$(FUZZ_CXX) -std=c++20 -g -O1 -fsanitize=fuzzer $(FUZZ_SAN) $(CXX_INC) -Itests/fuzz $< $(FUZZ_ANALYZER) \
	  $(FUZZ_DIR)/codec.o $(CXX_LIBS) -lpthread -o $@

fuzz: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

fuzz-smoke: fuzz
	@for t in $(FUZZ_TARGETS); do \
	  log=$(FUZZ_DIR)/fuzz_$$t.log; \
	  echo "== fuzz_$$t: the regression inputs, then $(FUZZ_SECONDS) s from tests/fuzz/corpus/$$t"; \
	  if ls tests/fuzz/regressions/$$t/* >/dev/null 2>&1; then \
	    $(FUZZ_DIR)/fuzz_$$t tests/fuzz/regressions/$$t/* >$$log 2>&1 || { tail -n 40 $$log; exit 1; }; fi; \
	  mkdir -p $(FUZZ_DIR)/corpus-$$t; \
	  $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus-$$t tests/fuzz/corpus/$$t >$$log 2>&1; status=$$?; \
	  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' $$log; \
	  test $$status -eq 0 || { tail -n 60 $$log; exit 1; }; \
	done

.PHONY: fuzz fuzz-smoke
