#!/usr/bin/env bash
# The test stages live in the Makefile; this forwards to it: scripts/test.sh [lint|unit|integration|system|molecule]
exec make -C "$(cd "$(dirname "$0")/.." && pwd)" "${@:-test}"
