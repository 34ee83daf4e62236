#!/bin/sh
# `make demo`: runs the ferry demo (see `ferry demo --help`). $1: the build directory.
BUILD=${1:-build}
exec "$BUILD/ferry" demo
