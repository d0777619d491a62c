#!/usr/bin/env bash
# `make demo`: bm-flash on md RAID-5 over 4 ramdisks, bare and through
# dm-remap, side by side, with a chart (in the VM; a few minutes).
exec bash "$(dirname "$0")/vm-job.sh" demo --mem 3072 --timeout 3600 -- \
	bash tests/vm/guest-demo.sh
