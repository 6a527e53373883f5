# The chaos soak and the load test against kubesim (issue 11): tests/soak/soak.py and
# tests/load/load.py, with docs/testing.md ("Soak" and "Load"). Included by the Makefile.
#
#   make soak [SOAK_RUNS=N] [SOAK_SEED=S]   the soak with the shipped static binary
#   make soak-short                          50 seeded runs with the ASan build (in `make test`)
#   make load [LOAD_RENDERS=N]               64 concurrent renders against kubesim
#   make load LOAD_REALKUBE=8                8 concurrent renders in the real cluster's sidecar
.PHONY: soak soak-short load

SOAK_RUNS ?= 200
SOAK_SEED ?=
SOAK_SHORT_SEED ?= 20251125
LOAD_RENDERS ?= 64
LOAD_REALKUBE ?=

soak: test-deps build/krmpod
	$(PYTHON) tests/soak/soak.py --runs $(SOAK_RUNS) $(if $(SOAK_SEED),--seed $(SOAK_SEED)) \
	  --krmpod build/krmpod --report build/soak/report.json

# Part of `make test`: a few minutes at most (about 1 on 2 idle cores): a 2 MB large case
# and 5 s pod deadlines keep the runs that wait for activeDeadlineSeconds short.
soak-short: test-deps build/asan/krmpod
	$(PYTHON) tests/soak/soak.py --runs 50 --seed $(SOAK_SHORT_SEED) --krmpod build/asan/krmpod \
	  --large-mb 2 --fn-timeout 5s --report build/soak/report-short.json

ifeq ($(LOAD_REALKUBE),)
load: test-deps build/krmpod
	$(PYTHON) tests/load/load.py --renders $(LOAD_RENDERS) --krmpod build/krmpod \
	  --report build/load/report.json
else
load: test-deps build/krmpod build/realkube/argocd-cmp-server
	KRMPOD_REALKUBE_LOAD=$(LOAD_REALKUBE) REALKUBE=$(REALKUBE) KRMPOD_BIN=$(CURDIR)/build/krmpod \
	  $(PYTHON) -m pytest -q -s tests/realkube/test_load.py
endif
