#!/usr/bin/env bash
# Runs inside the virtme-ng guest (see tests/vm/run-vm.sh): load the freshly
# built module and run the integration suite once for the whole boot.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

modprobe -a dm-mod libcrc32c loop dm-flakey dm-delay dm-log-writes dm-zero || exit 1
insmod dm-remap/dm-remap.ko || { echo "guest: insmod dm-remap.ko failed"; exit 1; }
modprobe brd rd_nr=8 rd_size=131072 || exit 1

# kmemleak (vmdebug's kernel): no automatic scans.  Its thread scans the
# memory map (6 GiB here) 60 s after boot and every 10 minutes, under
# TCG, and nothing reads what it finds but test_construction_out_of_memory,
# which scans when it wants to.
km=/sys/kernel/debug/kmemleak
[ ! -w "$km" ] || echo scan=off > "$km" || echo "guest: kmemleak scan=off failed"

# dm-remap's KUnit suite as a module built for this kernel (vmdebug's,
# which has KUnit built in: DMR_KUNIT_KO), before the integration tests:
# it runs as it loads; its KTAP from the kernel log goes to kunit.ktap for
# kunit.py parse on the host, and any KASAN, lockdep or kmemleak report
# it causes to run-vm.sh's check of the whole log.
rm -f "$DMR_OUT/kunit.ktap"
if [ -n "${DMR_KUNIT_KO:-}" ]; then
	n0=$(dmesg | wc -l)
	if insmod "$DMR_KUNIT_KO"; then
		dmesg | tail -n +"$((n0 + 1))" > "$DMR_OUT/kunit.ktap"
		rmmod dm_remap_kunit || echo "guest: rmmod dm_remap_kunit failed"
	else
		echo "guest: insmod $DMR_KUNIT_KO failed"
	fi
fi

# DMR_TEST_PATHS: the test files of one of make check's vm shards
rm -f "$DMR_OUT/counts.txt"
# shellcheck disable=SC2086
/usr/bin/python3 -m pytest -v -p no:cacheprovider -o cache_dir=/tmp/pytest-cache \
	--junitxml="$DMR_OUT/junit-vm.xml" ${DMR_TEST_PATHS:-tests/integration} "$@"
rc=$?
# what the tests counted (tests/integration/conftest.py report_count())
[ -f "$DMR_OUT/counts.txt" ] && sed 's/^/counts: /' "$DMR_OUT/counts.txt"

# A debug kernel (the vmdebug stage): lockdep must still be on at the
# end, or the run checked no locking at all.
if [ -r /proc/lockdep_stats ]; then
	if grep -qE '^ *debug_locks: +1$' /proc/lockdep_stats; then
		echo "counts: lockdep on to the end ($(sed -n 's/^ *lock-classes: *//p' \
			/proc/lockdep_stats) lock classes), KASAN on"
	else
		echo "guest: lockdep switched itself off during the run"
		rc=1
	fi
fi

# The module must unload cleanly once every device is gone.
if ! rmmod dm-remap; then
	echo "guest: rmmod dm-remap failed"
	dmsetup ls
	rc=1
fi
exit $rc
