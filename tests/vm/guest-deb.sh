#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the deb stage: install and remove the packages `make deb`
# built, in a VM whose /usr, /etc and /var are overlays in guest RAM:
#
#   tests/vm/run-vm.sh --overlay /usr --overlay /etc --overlay /var OUTDIR -- \
#       bash tests/vm/guest-deb.sh DEBDIR
#
# dpkg -i of dm-remap-dkms and dm-remap-tools (DKMS builds and installs the
# module for the running kernel), dkms status, modprobe dm-remap (the DKMS
# module), the installed /usr/sbin/remapctl formats a brd ramdisk and
# creates, uses and removes a target; then dpkg -r and dpkg -P of both, and
# the files, the DKMS module and the packages are gone.  The last line is
# "N passed, N failed (guest-deb)".
set -uo pipefail

debdir=${1:?usage: guest-deb.sh DEBDIR}
# dpkg wants ldconfig and start-stop-daemon in PATH
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
krel=$(uname -r)
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() {	# check DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then ok "$d"; else bad "$d"; fi
}
finish() {
	echo "$pass passed, $fail failed (guest-deb)"
	[ "$fail" -eq 0 ]
	exit
}

tools=$(ls "$debdir"/dm-remap-tools_*.deb 2>/dev/null)
dkmsdeb=$(ls "$debdir"/dm-remap-dkms_*.deb 2>/dev/null)
if [ -z "$tools" ] || [ -z "$dkmsdeb" ]; then
	bad "no dm-remap-tools/dm-remap-dkms .deb in $debdir"; finish
fi
ver=$(dpkg-deb -f "$dkmsdeb" Version)
# the overlays are there: a write lands in guest RAM, never on the host
for d in /usr /etc /var/lib/dpkg; do
	if ! touch "$d/.guest-deb-probe" 2>/dev/null; then
		bad "$d is not writable: run with --overlay /usr --overlay /etc --overlay /var"; finish
	fi
	rm -f "$d/.guest-deb-probe"
done
if dpkg-query -W dm-remap-tools dm-remap-dkms >/dev/null 2>&1 || [ -e /usr/src/dm-remap-"$ver" ] ||
   modinfo dm-remap >/dev/null 2>&1; then
	bad "dm-remap already installed before the test"; finish
fi
# no man-db index update (minutes under TCG, nothing to test)
rm -f /var/lib/man-db/auto-update

echo "== dpkg -i $(basename "$dkmsdeb") $(basename "$tools")"
t0=$SECONDS
check "dpkg -i both packages" dpkg -i "$dkmsdeb" "$tools"
echo "(dpkg -i took $((SECONDS - t0))s)"
echo "== dkms status"
st=$(dkms status dm-remap 2>&1)
echo "$st"
# (fixed strings: the release has a '+')
check "dkms: dm-remap/$ver installed for $krel" \
	test -n "$(grep -F "dm-remap/$ver, $krel, " <<<"$st" | grep -F ": installed")"
mod=$(modinfo -n dm-remap 2>/dev/null)
echo "module: $mod"
check "modinfo: the DKMS module (updates/dkms)" \
	test -n "$(grep -F "/modules/$krel/updates/dkms/dm-remap.ko" <<<"$mod")"
check "modprobe dm-remap" modprobe dm-remap
check "dm-remap loaded, remap target registered" \
	sh -c 'grep -q "^dm_remap " /proc/modules && dmsetup targets | grep -q "^remap "'
for f in /usr/sbin/remapctl /usr/sbin/bm-flash /usr/sbin/dm-remap-compare /usr/bin/remap-sim \
	/lib/systemd/system/dm-remap.service /lib/udev/rules.d/69-dm-remap.rules \
	/usr/share/man/man8/remapctl.8.gz /usr/src/dm-remap-"$ver"/dkms.conf; do
	check "installed: $f" test -e "$f"
done

echo "== remapctl (installed) on a brd ramdisk"
modprobe brd rd_nr=1 rd_size=65536
check "remapctl format /dev/ram0" /usr/sbin/remapctl format /dev/ram0
check "remapctl create t0 /dev/ram0" /usr/sbin/remapctl create t0 /dev/ram0
check "dmsetup table t0: a remap target" sh -c 'dmsetup table t0 | grep -q " remap "'
check "write and read back 4 MiB through t0" bash -c '
	head -c 4194304 /dev/urandom > /tmp/pattern &&
	dd if=/tmp/pattern of=/dev/mapper/t0 bs=1M oflag=direct status=none &&
	cmp <(dd if=/dev/mapper/t0 bs=1M count=4 iflag=direct status=none) /tmp/pattern'
/usr/sbin/remapctl status t0
check "remapctl remove t0" /usr/sbin/remapctl remove t0
check "remapctl check /dev/ram0: clean" /usr/sbin/remapctl check /dev/ram0
check "rmmod dm-remap" rmmod dm-remap
rmmod brd

echo "== dpkg -r, dpkg -P"
check "dpkg -r both packages" dpkg -r dm-remap-tools dm-remap-dkms
st=$(dkms status dm-remap 2>&1)
echo "dkms status after dpkg -r: '${st}'"
check "dkms: no dm-remap" test -z "$(grep dm-remap <<<"$st")"
check "dkms tree: no dm-remap" test ! -e /var/lib/dkms/dm-remap
check "module gone from /lib/modules/$krel" \
	test -z "$(find /lib/modules/"$krel" -name 'dm-remap.ko*')"
check "modinfo dm-remap: not found" sh -c '! modinfo dm-remap >/dev/null 2>&1'
for f in /usr/sbin/remapctl /usr/sbin/bm-flash /usr/sbin/dm-remap-compare /usr/bin/remap-sim \
	/lib/systemd/system/dm-remap.service /lib/systemd/system/dm-remap-activate@.service \
	/lib/udev/rules.d/69-dm-remap.rules /usr/share/bash-completion/completions/remapctl \
	/usr/share/man/man8/remapctl.8.gz /usr/share/dm-remap /usr/src/dm-remap-"$ver"; do
	check "removed: $f" test ! -e "$f"
done
check "dpkg -P both packages" dpkg -P dm-remap-tools dm-remap-dkms
check "dpkg: neither package known" sh -c '! dpkg-query -W dm-remap-tools dm-remap-dkms 2>/dev/null | grep -q .'
check "purged: /usr/share/doc/dm-remap-tools, /usr/share/doc/dm-remap-dkms" \
	test ! -e /usr/share/doc/dm-remap-tools -a ! -e /usr/share/doc/dm-remap-dkms
finish
