#!/usr/bin/env bash
# `make bench`: bare vs dm-remap on md RAID-5 over ramdisks, in the VM.
exec bash "$(dirname "$0")/vm-job.sh" bench --mem 3072 --timeout 3600 -- \
	/usr/bin/python3 tests/vm/guest-bench.py
