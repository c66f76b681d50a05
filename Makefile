# metnos-sandbox-ops: the two commands are `make run` and `make test`.
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: run check audit test lint unit integration system molecule docs clean

## run: set up the venv and provision this host (playbooks/site.yml), ending with a summary
run:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/site.yml $(ARGS)

## check: the same in check mode (changes nothing)
check:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/site.yml --check --diff $(ARGS)

## test: set up everything the tests need and run the whole suite (what .ci/run calls)
test:
	@scripts/bootstrap.sh --test
	scripts/test.sh

lint unit integration system molecule:
	@scripts/bootstrap.sh --test
	scripts/test.sh $@

## docs: regenerate docs/diagnostics.md from the code registry, docs/unit-directives.md from the measurement
docs:
	@scripts/bootstrap.sh
	python scripts/gen-diagnostics-doc.py > docs/diagnostics.md
	python scripts/gen-unit-directives-doc.py > docs/unit-directives.md

clean:
	rm -rf $(VENV) .ansible .pytest_cache

## audit: the read-only fleet audit, reports in ./reports
audit:
	@scripts/bootstrap.sh
	ansible-playbook playbooks/audit.yml $(ARGS)
