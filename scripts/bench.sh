#!/usr/bin/env bash
# `make bench`: tools/compare (bm-flash grid + fio jobs, bare vs dm-remap) on
# md RAID-5 over 4 and over 8 ramdisks and on a single ramdisk, in the VM.
# Results: $DMR_CACHE/results/bench-<date>/ (bench.json, one directory with
# results.json and chart.png per configuration).
exec bash "$(dirname "$0")/vm-job.sh" bench --mem 4096 --timeout 5400 -- \
	/usr/bin/python3 tests/vm/guest-bench.py
