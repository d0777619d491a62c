#!/usr/bin/env bash
# `make transcript`, guest side: the session Documentation/dm-remap-transcript.txt
# shows, run for real (scripts/transcript.sh writes the file from this
# output), so the documented commands, status lines and figures are what
# this tree's module and tools print.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1

SECONDS_PER_JOB=${DMR_TRANSCRIPT_SECONDS:-10}
MNT=/tmp/demo-mnt

# Print each command the way a transcript shows it, then run it.
run() {
	printf '# %s\n' "$*"
	"$@"
}

modprobe -a dm-mod libcrc32c
insmod dm-remap/dm-remap.ko
modprobe brd rd_nr=1 rd_size=$((512 * 1024))
mkdir -p $MNT
cat <<HDR
Captured in the test VM (tests/vm/run-vm.sh: Debian 6.12 kernel, QEMU
TCG) on a 512 MiB brd ramdisk by \`make transcript\`, format version $(
sed -n 's/^#define DMR_FORMAT_VERSION[[:space:]]*\([0-9]*\).*/\1/p' dm-remap/dmr-format.h).
Status fields are numbered in the Status section of dm-remap.rst.

HDR
run tools/remapctl format /dev/ram0
run tools/remapctl create demo /dev/ram0
run dmsetup table demo
run dmsetup status demo
run mkfs.ext4 -q -F /dev/mapper/demo
run mount /dev/mapper/demo $MNT
run df -h $MNT
echo
echo "### fio, ${SECONDS_PER_JOB}s per job, 4 KiB direct I/O, 1 thread"
for rw in randwrite randread; do
	fio --name=ext4-on-remap --filename=$MNT/fio.dat --size=256M --rw=$rw \
		--bs=4k --direct=1 --ioengine=psync --runtime="$SECONDS_PER_JOB" \
		--time_based --output-format=json > /tmp/fio-$rw.json
	python3 - "$rw" /tmp/fio-$rw.json <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))["jobs"][0]
print(f"ext4-on-remap {sys.argv[1]:<10} read {j['read']['iops']:8.0f} IOPS  "
      f"write {j['write']['iops']:8.0f} IOPS")
PY
done
rm -f $MNT/fio.dat
run umount $MNT
run e2fsck -fn /dev/mapper/demo
run dmsetup status demo
run dmsetup message demo 0 checkpoint
run tools/remapctl remove demo
rmmod dm-remap
