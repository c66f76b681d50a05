# metnos-sandbox-ops: the two commands are `make run` and `make test`.
# The test stages are the targets below: each calls its tools directly. The environment every target
# shares is set here, in one place.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV ?= $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/collections:$(CURDIR)/.ansible/collections
export PYTHONDONTWRITEBYTECODE := 1
PYTEST := python -m pytest -q
# pycodestyle as ansible-test's pep8 sanity test runs it (its max line length and ignore list)
PEP8 := --max-line-length 160 --ignore E402,W503,W504,E741,E203,E701,E704
STAGES := lint unit integration system molecule

.PHONY: help run check audit test $(STAGES) test-deps host-packages preflight docs collection install-collection sanity changelog lock clean

## run: set up the venv and provision this host (playbooks/site.yml), ending with a summary
run:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/site.yml $(ARGS)

## check: the same in check mode (changes nothing)
check:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/site.yml --check --diff $(ARGS)

## audit: the read-only fleet audit, reports in ./reports
audit:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/audit.yml $(ARGS)

## test: set up everything the tests need and run every stage in order (what .ci/run calls; not with -j)
test: $(STAGES)

# The test stages: podman settings for this project's build machines (runc, ulimits) unless the
# caller gives their own CONTAINERS_CONF (scripts/molecule.sh then respects it as given).
$(STAGES) test-deps: export CONTAINERS_CONF ?= $(CURDIR)/tests/podman/containers.conf

test-deps: host-packages
	@scripts/bootstrap.sh --test

## host-packages: what the tests need from Debian (bubblewrap, python3-seccomp, podman, ...): the one installer .ci/run uses too
host-packages:
	@scripts/host-packages.sh

## lint: ruff, mypy (the core, strict), pycodestyle, ansible-lint, the users' CI workflow (schema, actionlint),
## molecule syntax, the changelog, then ansible-test sanity on the built collection
lint: test-deps collection
	@echo "=== lint ==="
	ruff check .
	mypy
	pycodestyle $(PEP8) module_utils library action_plugins callback_plugins filter_plugins doc_fragments
	ansible-lint --profile production playbooks/ roles/
	check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	scripts/actionlint.sh
	scripts/molecule.sh --syntax
	cd collections/ansible_collections/metnos/sandbox && antsibull-changelog lint
	python scripts/sanity.py

## collection: build dist/metnos-sandbox-X.Y.Z.tar.gz from this tree (X.Y.Z: galaxy.yml's version)
collection:
	@scripts/bootstrap.sh
	rm -f dist/metnos-sandbox-*.tar.gz
	python scripts/build-collection.py

## install-collection: build the tarball and install it into DEST (an absolute collections path), as a user
## would: ansible-galaxy run from an empty folder outside this checkout, without this checkout's ansible.cfg
## (which would answer "Nothing to do"), replacing a copy already there; DEST is galaxy's collections path for
## the install (else it warns the collection "will not be picked up", which the project's ansible.cfg does)
install-collection: collection
	@case "$(DEST)" in /*) ;; *) echo "install-collection: give DEST=/absolute/path/to/collections" >&2; exit 2;; esac
	@away=$$(mktemp -d) && cd "$$away" && \
	  env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$(DEST)" ANSIBLE_HOME="$$away/home" \
	  $(VENV)/bin/ansible-galaxy collection install --offline --force -p "$(DEST)" \
	  "$(CURDIR)"/dist/metnos-sandbox-$$(sed -n 's/^version: *//p' "$(CURDIR)/galaxy.yml").tar.gz; \
	  rc=$$?; rm -rf "$$away"; exit $$rc

## sanity: ansible-test sanity on the built collection (also the end of lint)
sanity: test-deps collection
	python scripts/sanity.py

## changelog: release changelogs/fragments/ into changelogs/changelog.yaml and CHANGELOG.md as galaxy.yml's version
changelog: test-deps
	scripts/changelog.sh

## unit: the core, the faces in-process, the roles against fake package tools
unit: test-deps host-packages
	@echo "=== unit ==="
	$(PYTEST) tests/unit

## integration: real bwrap and Ansible on this machine; the built collection installed as a user would
integration: test-deps preflight collection
	@echo "=== integration ==="
	$(PYTEST) tests/integration

## system: real systemd hosts (podman containers from locally built Debian images; the dnf and pacman hosts built on them)
system: test-deps host-packages
	@echo "=== system ==="
	@command -v podman >/dev/null || { echo "system: podman is missing (apt-get install podman runc)" >&2; exit 2; }
	scripts/build-images.sh 12 13
	scripts/build-pkghost-images.sh dnf pacman
	$(PYTEST) tests/system

## molecule: the one scenario molecule/default per platform, then fault
molecule: test-deps
	@echo "=== molecule ==="
	scripts/molecule.sh

preflight:
	@missing=(); \
	command -v bwrap >/dev/null || missing+=(bubblewrap); \
	{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import seccomp' 2>/dev/null; } || missing+=(python3-seccomp); \
	if [ $${#missing[@]} -gt 0 ]; then \
	  echo "test: missing host packages: $${missing[*]} (as root: scripts/host-packages.sh, which make test runs)" >&2; \
	  exit 2; \
	fi

## docs: regenerate the generated docs (diagnostics, unit directives, role variables, spec coverage: it collects the
## tests); tests fail on drift
docs:
	@scripts/bootstrap.sh --test
	python scripts/gen-diagnostics-doc.py > docs/diagnostics.md
	python scripts/gen-unit-directives-doc.py > docs/unit-directives.md
	python scripts/gen-role-variables-doc.py > docs/role-variables.md
	python scripts/gen-spec-coverage.py > docs/spec-coverage.md

## lock: after editing a requirements*.in, write every lock (requirements*.txt: each distribution pinned with its
## sha256, transitive ones included) and install the test lock; commit the .in with its .txt
lock: test-deps
	python scripts/lock.py compile
	@scripts/bootstrap.sh --test

clean:
	rm -rf $(VENV) .ansible .pytest_cache dist

## help: list these targets with what each does (from the "## target:" comment that starts each block of them)
help:
	@awk '/^## / { text = substr($$0, 4); name = ""; \
	    if (!inblock && text ~ /^[a-z-]+: /) { name = substr(text, 1, index(text, ":") - 1); \
	      text = substr(text, length(name) + 3) } \
	    printf "  %-20s %s\n", name, text; inblock = 1; next } { inblock = 0 }' $(firstword $(MAKEFILE_LIST))
