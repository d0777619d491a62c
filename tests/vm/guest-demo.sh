#!/usr/bin/env bash
# `make demo`, guest side: md RAID-5 over 4 ramdisks, then tools/compare runs
# a short bm-flash grid (4K to 1M, 1 and 10 threads) on the bare array, on
# dm-linear over it (what device-mapper itself costs), on dm-remap over it
# and on the peers (dm-writeboost and bcache in writeback mode, each with
# its cache on the array's last 10%: DMR_PEERS_DIR, scripts/peers.sh's;
# DMR_DEMO_PEERS=none leaves them out), prints the side-by-side table and
# writes the chart.
set -euo pipefail
cd "$(dirname "$0")/../.." || exit 1

SECONDS_PER_CELL=${DMR_DEMO_SECONDS:-2}
RAM_MIB=${DMR_DEMO_RAM_MIB:-512}
MD=/dev/md/dmrdemo

# Print each command the way a transcript shows it, then run it.
run() {
	local a line=
	for a; do
		[[ $a == *[[:space:]]* ]] && a="\"$a\""
		line+="$a "
	done
	printf '# %s\n' "${line% }"
	"$@"
}

modprobe -a dm-mod libcrc32c raid456
run insmod dm-remap/dm-remap.ko
run modprobe brd rd_nr=4 rd_size=$((RAM_MIB * 1024))
run mdadm --create $MD --run --quiet --level=5 --raid-devices=4 --chunk=64 \
	--assume-clean --metadata=1.2 /dev/ram0 /dev/ram1 /dev/ram2 /dev/ram3
peers=${DMR_DEMO_PEERS:-writeboost,bcache}
popts=()
if [ "$peers" != none ]; then
	[ -n "${DMR_PEERS_DIR:-}" ] || { echo "demo: no DMR_PEERS_DIR (scripts/peers.sh)"; exit 1; }
	[[ ,$peers, != *,writeboost,* ]] || [ -e /sys/module/dm_writeboost ] ||
		run insmod "$DMR_PEERS_DIR/wb/dm-writeboost.ko"
	[[ ,$peers, != *,bcache,* ]] || modprobe bcache
	popts=(--peers "$peers")
	[[ ,$peers, != *,bcache,* ]] || popts+=(--make-bcache "$DMR_PEERS_DIR/sbin/make-bcache")
fi
run tools/compare "${popts[@]}" --label "md RAID-5, 4 x $RAM_MIB MiB ramdisks, 64K chunk" \
	--bs 4K,8K,16K,32K,64K,128K,256K,512K,1M --threads 1,10 \
	--seconds "$SECONDS_PER_CELL" --size 256M --linear --precondition 1 \
	--out "$DMR_OUT" $MD
mdadm --stop $MD >/dev/null
rmmod dm-remap
echo "demo finished"
