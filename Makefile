# kvio — top-level build.  `make` builds $(BUILD)/kvio; `make test` runs the tests;
# `make deps` installs the Debian packages the build and tests need.
# Libraries: every <lib>/*.cpp compiles into $(BUILD)/lib<lib>.a, one per folder (README.md, "Source map"); the
# binary is cli/main.cpp over them. BPF: bpf/*.bpf.c -> skeletons. `make check-layers`: no folder includes a higher one.
.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

# SAN=address,undefined: every C++ object and binary built with -fsanitize=$(SAN), into build-san/ by default.
SAN      ?=
BUILD    ?= $(if $(SAN),build-san,build)
CXX      ?= g++
CLANG    ?= clang
BPFTOOL  ?= bpftool
V        ?= 0
# ccache, where installed, in front of every C++ compile (never required; CCACHE= turns it off).
CCACHE   ?= $(shell command -v ccache 2>/dev/null)
Q        := $(if $(filter 1,$(V)),,@)
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++20 -Wall -Wextra -Wno-missing-field-initializers -MMD -MP -I. -I$(BUILD)
# Under SAN the libraries are built at -O1 (ASan's usual level; it compiles in about half the time of -O2).
CXXFLAGS += $(if $(SAN),-O1 -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer $(SAN_EXTRA))
LDLIBS   := -lbpf -lelf -lz -lzstd -lyaml-cpp -luring -lhiredis -lpthread $(shell pkg-config --libs simdjson 2>/dev/null || echo -lsimdjson)
# libxlsxwriter (kvio simulate --xlsx-output): found by pkg-config; without it the export writes CSV.
XLSX_LIBS   := $(shell pkg-config --libs xlsxwriter 2>/dev/null)
XLSX_CFLAGS := $(if $(XLSX_LIBS),$(shell pkg-config --cflags xlsxwriter 2>/dev/null),-DKVIO_NO_XLSXWRITER)
CXXFLAGS += $(XLSX_CFLAGS)
LDLIBS   += $(XLSX_LIBS)
# -mcpu=v3: atomic fetch-and-add and compare-and-swap (the slot tables; kernel 5.12+)
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -I. -Wall -Wno-unused-function

# Highest floor first (scripts/check-layers.sh), so that an archive links before the ones it calls. APP_LIBS: the CLI's
# command shells (cli/ without main.cpp), the end-to-end pipeline, the reports and the tracer; LIBS: the floors below
# them, which the fuzz targets link. serving (the `kvio simulate` workload) lives in workload/serving/.
APP_LIBS := cli drives run report trace
LIBS     := diagnose audit serving replay importer distiller validate workload redis common
LIB_DIR   = $(if $(filter serving,$(1)),workload/serving,$(1))
# serving's subfolders (tiers, arrivals, results, cluster, mlperf) are the same library; mpi/ builds its own archives below.
SERVING_SUBDIRS := tiers arrivals results cluster mlperf
LIB_SUBDIRS = $(if $(filter serving,$(1)),$(addprefix workload/serving/,$(SERVING_SUBDIRS)))
LIB_SRCS  = $(filter-out cli/main.cpp,$(wildcard $(call LIB_DIR,$(1))/*.cpp $(addsuffix /*.cpp,$(call LIB_SUBDIRS,$(1)))))
LIB_OBJS  = $(patsubst %.cpp,$(BUILD)/%.o,$(call LIB_SRCS,$(1)))

# Open MPI for `kvio simulate --mpi` (workload/serving/mpi/): pkg-config ompi, else mpicxx --showme. Without it,
# $(BUILD)/libserving-mpi_client.a holds the launcher; without it, libserving-mpi_absent.a (--mpi refused with the reason;
# --num-clients works) and nothing else changes.
# MPI=0 builds without it even when found. The static binary never has it (Open MPI ships no static libraries).
MPI ?= 1
ifeq ($(MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi 2>/dev/null || mpicxx --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi 2>/dev/null || mpicxx --showme:link 2>/dev/null)
endif
MPI_IMPL := $(if $(strip $(MPI_LIBS)),mpi_client,mpi_absent)
LDLIBS   += $(MPI_LIBS)
# The launcher's archive right after libserving.a: the CLOSED protocol (mlperf/closed_run.cpp) calls it, and it calls
# the simulation; what it needs of libserving.a, the command shells and the protocol have pulled in before.
LIB_ARCHIVES := $(foreach l,$(LIBS),$(BUILD)/lib$(l).a $(if $(filter serving,$(l)),$(BUILD)/libserving-$(MPI_IMPL).a))
APP_ARCHIVES := $(foreach l,$(APP_LIBS),$(BUILD)/lib$(l).a)
$(BUILD)/workload/serving/mpi/mpi_client.o: CXXFLAGS += $(MPI_CFLAGS)
$(BUILD)/libserving-%.a: $(BUILD)/workload/serving/mpi/%.o
	$(Q)rm -f $@ && ar rcs $@ $^

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))

APP_OBJS  := $(BUILD)/cli/main.o $(foreach l,$(APP_LIBS),$(call LIB_OBJS,$(l)))

UNIT_SRCS := $(wildcard tests/unit/*.cpp)
E2E_SRCS  := $(wildcard tests/e2e/*.cpp)
UNIT_OBJS := $(patsubst %.cpp,$(BUILD)/%.o,$(UNIT_SRCS))
E2E_OBJS  := $(patsubst %.cpp,$(BUILD)/%.o,$(E2E_SRCS))

# Fuzz targets (tests/fuzz/fuzz_NAME.cpp, one per reader): $(BUILD)/fuzz-replay/NAME runs a corpus once (make test);
# $(FUZZ_BUILD)/fuzz/NAME is the libFuzzer binary (clang, make fuzz).
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
FUZZ_REPLAYS  = $(patsubst %,$(BUILD)/fuzz-replay/%,$(FUZZ_TARGETS))
FUZZ_CLI_OBJS = $(BUILD)/trace/events_dump.o $(BUILD)/trace/capture_records.o $(BUILD)/trace/event_format.o \
    $(BUILD)/trace/http_server.o  # kvio dump's reader and the exporter's request parser (not libtrace.a: no BPF skeleton)
FUZZ_BUILD   ?= build-fuzz
FUZZ_CXX     ?= clang++
FUZZ_SECONDS ?= 600

.PHONY: all deps test unit-test e2e-test clean demo bench static FORCE fuzz fuzzers soak check-layers format check-format
all: $(BUILD)/kvio

deps:
	bash scripts/deps.sh

$(BUILD)/vmlinux.h:
	@test -r $(VMLINUX_BTF) || { echo "kvio: $(VMLINUX_BTF) is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y is required to build and run kvio's CO-RE programs)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	@echo "  BPF      $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@echo "  SKEL     $@"
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The tests' own code is orchestration and assertions: compiled without optimisation and with line tables only, it
# builds 2-3 times faster (a GoogleTest file of many assertions took minutes at -O2 under ASan); the code under test
# keeps CXXFLAGS. Appended, so these win over CXXFLAGS' -O and -g.
$(BUILD)/tests/%.o: CXXFLAGS += -O0 -g1

$(BUILD)/%.o: %.cpp
	@mkdir -p $(@D)
	@echo "  CXX      $@"
	$(Q)$(CCACHE) $(CXX) $(CXXFLAGS) -c $< -o $@

# The skeletons must exist before the first compile (order-only); which objects include them, and so rebuild when a
# BPF program changes, the compiler's .d files say (trace/tracer.cpp only).
$(APP_OBJS): | $(BPF_SKELS)

# `kvio --version`: the release number in VERSION and `git describe` of the source tree at build time ("unknown"
# outside a git checkout). The header is rewritten only when the text changes, so an unchanged tree rebuilds nothing.
KVIO_VERSION := $(shell cat VERSION) ($(or $(shell git describe --tags --always --dirty 2>/dev/null),unknown))
$(BUILD)/kvio_version.h: FORCE
	@mkdir -p $(@D)
	@v='#define KVIO_VERSION "$(KVIO_VERSION)"'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(BUILD)/cli/main.o $(BUILD)/cli/cmd_simulate.o $(BUILD)/cli/cmd_mlperf_check.o: $(BUILD)/kvio_version.h
$(BUILD)/cli/cmd_drives.o: $(BUILD)/kvio_version.h
FORCE:

define LIB_RULE
$(BUILD)/lib$(1).a: $(call LIB_OBJS,$(1))
	@mkdir -p $$(@D)
	$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(APP_LIBS) $(LIBS),$(eval $(call LIB_RULE,$(l))))

$(BUILD)/kvio: $(BUILD)/cli/main.o $(APP_ARCHIVES) $(LIB_ARCHIVES)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# A fully static binary for QEMU guests that run another kernel (CO-RE objects inside).
# Debian ships simdjson as a shared library only: the static binary's kvio.events/1 reader parses with nlohmann_json
# (common/events_reader.cpp built with -DKVIO_NO_SIMDJSON, linked ahead of libcommon.a's copy). Debian's libxlsxwriter
# is shared only too: the static --xlsx-output writes CSV (xlsx_export.cpp built with -DKVIO_NO_XLSXWRITER).
static: $(BUILD)/kvio-static
$(BUILD)/nosimdjson/events_reader.o: common/events_reader.cpp
	@mkdir -p $(@D)
	$(Q)$(CCACHE) $(CXX) $(CXXFLAGS) -DKVIO_NO_SIMDJSON -c $< -o $@
$(BUILD)/noxlsx/xlsx_export.o: workload/serving/results/xlsx_export.cpp
	@mkdir -p $(@D)
	$(Q)$(CCACHE) $(CXX) $(CXXFLAGS) -DKVIO_NO_XLSXWRITER -c $< -o $@
$(BUILD)/kvio-static: $(BUILD)/cli/main.o $(BUILD)/nosimdjson/events_reader.o $(BUILD)/noxlsx/xlsx_export.o $(APP_ARCHIVES) $(BUILD)/libserving-mpi_absent.a $(filter-out $(BUILD)/libserving-mpi_%,$(LIB_ARCHIVES))
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -static -o $@ $^ -lbpf -lelf -lz -lzstd -lyaml-cpp -luring -lhiredis -lpthread

$(BUILD)/kvio_unit_tests: $(UNIT_OBJS) $(APP_ARCHIVES) $(LIB_ARCHIVES)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lgtest_main -lgtest $(LDLIBS)

# BPF test hooks (bpf/test_hooks.bpf.h) are only in $(BUILD)/kvio-test-hooks: the BPF object built with
# -DKVIO_BPF_TEST_HOOKS, its skeleton, and the sources that include a skeleton compiled against it (linked ahead of
# libtrace.a's copies, which are then not used). The e2e tests that set a hook run it; $(BUILD)/kvio has none.
TEST_HOOKS := $(BUILD)/test-hooks
TEST_HOOKS_OBJS := $(patsubst %.cpp,$(TEST_HOOKS)/%.o,$(shell grep -l 'skel\.h' $(foreach l,$(APP_LIBS),$(call LIB_SRCS,$(l)))))
$(TEST_HOOKS)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	@echo "  BPF      $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -DKVIO_BPF_TEST_HOOKS -c $< -o $@
$(TEST_HOOKS)/bpf/%.skel.h: $(TEST_HOOKS)/bpf/%.bpf.o
	@echo "  SKEL     $@"
	$(Q)$(BPFTOOL) gen skeleton $< > $@
$(TEST_HOOKS)/%.o: %.cpp | $(TEST_HOOKS)/bpf/kvio_trace.skel.h
	@mkdir -p $(@D)
	@echo "  CXX      $@"
	$(Q)$(CCACHE) $(CXX) -I$(TEST_HOOKS) $(CXXFLAGS) -DKVIO_BPF_TEST_HOOKS -c $< -o $@
$(BUILD)/kvio-test-hooks: $(BUILD)/cli/main.o $(TEST_HOOKS_OBJS) $(APP_ARCHIVES) $(LIB_ARCHIVES)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# The e2e tests run $(BUILD)/kvio (KVIO_BIN) and $(BUILD)/kvio-test-hooks: building them brings those up to date
# too (order-only: no relink of the tests).
$(BUILD)/kvio_e2e_tests: $(E2E_OBJS) $(APP_ARCHIVES) $(LIB_ARCHIVES) | $(BUILD)/kvio $(BUILD)/kvio-test-hooks $(BUILD)/faultfs
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ -lgtest_main -lgtest $(LDLIBS)

# The tests' FUSE filesystem that injects device faults (tests/faultfs/faultfs.cpp, libfuse3): test-only.
$(BUILD)/faultfs: tests/faultfs/faultfs.cpp
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) $$(pkg-config --cflags fuse3) -o $@ $< $$(pkg-config --libs fuse3)

$(UNIT_OBJS) $(E2E_OBJS): | $(BPF_SKELS)

$(BUILD)/fuzz-replay/%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/harness.o $(BUILD)/tests/fuzz/replay_main.o $(FUZZ_CLI_OBJS) $(LIB_ARCHIVES)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/harness.o $(FUZZ_CLI_OBJS) $(LIB_ARCHIVES)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CXX) $(CXXFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# The libFuzzer binaries: everything compiled by clang with coverage and ASan/UBSan into $(FUZZ_BUILD)/.
fuzzers:
	$(MAKE) -j$$(nproc) BUILD=$(FUZZ_BUILD) CXX='$(FUZZ_CXX)' SAN=fuzzer-no-link,address,undefined \
	    SAN_EXTRA=-fsanitize-ignorelist=tests/fuzz/ubsan-ignorelist.txt $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/%)

# Runs every fuzz target for FUZZ_SECONDS (default 600) from its corpus in tests/fuzz/corpus/; inputs that crash
# are kept in $(FUZZ_BUILD)/crashes/NAME/ (tests/fuzz/run.sh, docs/testing.md). Not part of `make test`.
fuzz: deps
	$(MAKE) fuzzers
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_TARGETS)

# A sustained mixed fio workload on a loop device under `kvio trace --events` (binary capture) for SOAK_SECONDS
# (default 60), its exporter scraped every second: checks 0 dropped and every scrape answered, reports commands/s,
# RSS at start and end, lost completions per 10^6 commands and the tracer's RSS slope
# (tests/soak.sh). Needs root. Not part of `make test`.
soak:
	bash scripts/deps.sh fio jq bc
	$(MAKE) $(BUILD)/kvio
	BUILD=$(BUILD) bash tests/soak.sh

# Benchmarks against fio and bpftrace (bench/run.sh; figures in docs/performance.md). Installs missing
# packages, builds, runs as root; about 20 minutes (the overhead stage: 8 modes x 2 engines x 7 rounds). Not part of `make test`.
bench:
	bash scripts/deps.sh bpftrace jq time python3-numpy python3-yaml strace
	$(MAKE) $(BUILD)/kvio
	BUILD=$(BUILD) bash bench/run.sh

# No folder includes a header of a higher floor (README.md, "Source map"); then the check's own self-test: an upward
# include planted in a copy of the tree must fail it.
check-layers:
	bash scripts/check-layers.sh
	bash scripts/check-layers.sh --self-test

# Every C, C++ and BPF source git tracks or would add (untracked, not ignored) in the house layout (.clang-format,
# bpf/.clang-format; docs/style.md).
# `make format` rewrites them; `make check-format` (run by `make test`) names the files that differ.
FORMAT_SRCS = $(shell git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.c' 2>/dev/null)
format:
	@clang-format -i $(FORMAT_SRCS) && echo "format: $(words $(FORMAT_SRCS)) files in the house layout"
check-format:
	@bad=$$(clang-format --dry-run $(FORMAT_SRCS) 2>&1 | sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u); \
	    if [ -n "$$bad" ]; then echo "check-format: not in the house layout (run make format):" $$bad >&2; exit 1; fi

# The test command README.md gives and .ci/run calls.
# SAN=address,undefined builds into build-san/ and runs the same tests under ASan/UBSan.
# The build is one stage, timed like the test stages (tests/run.sh): everything the tests run is built here, the NVMe
# guest's static kvio included (not under SAN: the static binary cannot link the sanitizer runtimes).
TEST_BUILD = $(BUILD)/kvio $(BUILD)/kvio_unit_tests $(BUILD)/kvio_e2e_tests $(FUZZ_REPLAYS) $(if $(SAN),,$(BUILD)/kvio-static)
test: check-layers deps check-format
	@t0=$$(date +%s); $(MAKE) -j$$(nproc) $(TEST_BUILD); rc=$$?; \
	    echo "stage: build$(if $(SAN), (SAN)) $$(($$(date +%s) - t0)) s"; exit $$rc
	BUILD=$(BUILD) SAN=$(SAN) bash tests/run.sh

# Tests without installing packages (a developer's loop).
check: check-layers check-format $(TEST_BUILD)
	BUILD=$(BUILD) SAN=$(SAN) bash tests/run.sh

# The main job on an embedded loop device: installs missing packages, builds, runs `kvio run` (needs root).
demo:
	bash scripts/deps.sh
	$(MAKE) $(BUILD)/kvio
	$(BUILD)/kvio run

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
