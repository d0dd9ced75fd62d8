#!/bin/sh
# Deliberately not executable (mode 644): the harness must say so instead of running it.
echo "not_executable.sh ran although it is not executable" >&2
