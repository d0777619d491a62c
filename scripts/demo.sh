#!/usr/bin/env bash
# `make demo`: bm-flash on md RAID-5 over 4 ramdisks, bare and through
# dm-remap, side by side, with a chart (in the VM; a few minutes).
# The peers beside it (dm-writeboost, bcache) come from scripts/peers.sh.
pd=$(bash "$(dirname "$0")/peers.sh")
exec bash "$(dirname "$0")/vm-job.sh" demo --mem 3072 --timeout 3600 -- \
	env DMR_PEERS_DIR="$pd" DMR_DEMO_PEERS="${DMR_DEMO_PEERS:-writeboost,bcache}" \
	DMR_DEMO_SECONDS="${DMR_DEMO_SECONDS:-2}" bash tests/vm/guest-demo.sh
