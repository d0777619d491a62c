#!/usr/bin/env bash
# `make demo`: format a ramdisk, create the target, mkfs, a short fio (VM).
exec bash "$(dirname "$0")/vm-job.sh" demo --mem 2048 -- bash tests/vm/guest-demo.sh
