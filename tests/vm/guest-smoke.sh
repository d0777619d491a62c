#!/bin/bash
# Guest-side smoke test for run-vm.sh:
#   tests/vm/run-vm.sh OUTDIR -- tests/vm/guest-smoke.sh
set -euo pipefail
echo "smoke: uname=$(uname -r) pwd=$PWD PATH=$PATH DMR_OUT=$DMR_OUT"
modprobe brd rd_nr=2 rd_size=65536
modprobe dm-mod
dmsetup create x --table "0 1024 linear /dev/ram0 0"
ls -l /dev/mapper/x # udev creates the node
dmsetup remove x
modprobe -a raid456 loop dm-flakey
/usr/bin/python3 -m pytest --version
touch /tmp/smoke-tmp-writable
echo "written in guest" >"$DMR_OUT/smoke-file"
echo ok
