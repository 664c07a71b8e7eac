#!/bin/sh
# make demo: the Makefile has built ./bin; tell the story with those binaries.
set -e
cd "$(dirname "$0")/.."
exec go run ./demo -bin ./bin "$@"
