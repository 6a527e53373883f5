# Releases (issue 28; docs/release.md). Included by the Makefile.
#
#   make release VERSION=vX.Y.Z   dist/: the multi-arch OCI image layout, install.yaml pinned
#                                 by the index digest, the SPDX SBOM, RELEASE-NOTES.md,
#                                 SHA256SUMS; built from `git archive HEAD` of a clean tree
#                                 whose manifests/ and CHANGELOG.md name VERSION
#                                 (scripts/release-prepare VERSION does both)
#   make release-check            checks DIST again (release/check_release.py)
#   make release-test             tests/release: two releases of this commit, byte for byte
#                                 the same; the checks caught on tampered copies (slow)
#
# Variables: DIST (default dist), RELEASE_ARCHES (default "amd64 arm64"; arm64 needs
# release/arm64.mk's build/arm64/krmpod in the commit), RELEASE_SOURCE (the repository URL
# the image and the SBOM name), SOURCE_DATE_EPOCH (default: the commit's time).

# The CA bundle's Debian package: package, version, SHA-256 of the .deb (release/cacerts.py).
# Debian's archive keeps only current versions: when the download fails, take the version
# it names and `apt-cache show` its SHA256.
CA_PIN := ca-certificates 20250419+deb13u1 c10585ac22c7f617a73d394eea29ba71d0356f350ae973b19043d1b017f80f54

DIST ?= dist
RELEASE_ARCHES ?= amd64 arm64
RELEASE_SOURCE ?= https://github.com/krmpod/krmpod
# VERSION only as given on the command line or in the environment: the Makefile's default
# (git describe) is no release name.
RELEASE_VERSION = $(if $(filter command line environment environment override override,$(origin VERSION)),$(VERSION))
empty :=
space := $(empty) $(empty)
comma := ,

.PHONY: release release-check release-test
release:
	$(PYTHON) release/release.py build '$(RELEASE_VERSION)' --dist '$(DIST)' \
		--arches '$(subst $(space),$(comma),$(strip $(RELEASE_ARCHES)))' --source '$(RELEASE_SOURCE)'

release-check:
	$(PYTHON) release/check_release.py --dist '$(DIST)' \
		--arches '$(subst $(space),$(comma),$(strip $(RELEASE_ARCHES)))' \
		$(if $(wildcard build/release/ca/*.deb),--ca-deb $(firstword $(wildcard build/release/ca/*.deb)))

release-test: test-deps
	$(PYTHON) -m pytest -q tests/release

# `krmpod version` names the version and the commit: the objects that print either are
# compiled again when one changes (build/version.stamp holds both, rewritten only then).
VERSION_OBJS := $(foreach v,musl asan glibc,$(addprefix build/$(v)/obj/,cli/cmd_version.o cli/cmd_docker.o base/http_xfer.o))
$(VERSION_OBJS): build/version.stamp
build/version.stamp: version-stamp-check
	@mkdir -p $(@D); s='$(VERSION) $(KRMPOD_COMMIT)'; [ "$$(cat $@ 2>/dev/null)" = "$$s" ] || echo "$$s" >$@
.PHONY: version-stamp-check
version-stamp-check:
