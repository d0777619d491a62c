#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Guest side of the deb stage: install and remove the packages `make deb`
# built, in a VM whose /usr, /etc and /var are overlays in guest RAM:
#
#   tests/vm/run-vm.sh --overlay /usr --overlay /etc --overlay /var OUTDIR -- \
#       bash tests/vm/guest-deb.sh DEBDIR
#
# First the README's quick start as it stands (README=path, default
# ./README.md): each command line of its first block after `make deb`
# (the stage ran `make test-deps` and `make deb` on the host), without `sudo`,
# with ~/.cache/dm-remap/deb standing for DEBDIR, on an md RAID-5 of four
# brd ramdisks as /dev/md0.  Its apt-get line installs dm-remap-dkms and
# dm-remap-tools (DKMS builds and installs the module for the running
# kernel).  Then: dkms status, the module is the DKMS one, the files are
# there, the installed remapctl writes and reads back data; then dpkg -r
# and dpkg -P of both, and the files, the DKMS module and the packages are
# gone.  The last line is "N passed, N failed (guest-deb)".
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

# The quick start's command lines: continuation lines joined, comments
# (" # ...") dropped, the host's `make` lines left out (the block must have
# `make deb`: the packages come from it), `sudo ` dropped, the package
# directory replaced.
readme=${README:-README.md}
qs=$(python3 - "$readme" "$debdir" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text[text.index("\n## Quick start\n"):]
block = part[part.index("```sh\n") + 6:]
block = block[:block.index("```")]
lines, cur = [], ""
for raw in block.splitlines():
    if raw.rstrip().endswith("\\"):
        cur += raw.rstrip()[:-1] + " "
        continue
    lines.append(cur + raw)
    cur = ""
made = False
for line in lines:
    line = re.sub(r"\s+#\s.*$", "", line).strip()
    if not line or line.startswith("#"):
        continue
    if line.startswith("make "):
        made = made or line.split()[1] == "deb"
        continue
    if not made:
        sys.exit("the quick start installs before `make deb`: " + line)
    line = re.sub(r"^sudo ", "", line)
    print(line.replace("~/.cache/dm-remap/deb", sys.argv[2]))
if not made:
    sys.exit("the quick start has no `make deb`")
PY
)
check "README quick start: found, packages from make deb" test -n "$qs"
echo "== an md RAID-5 of four ramdisks as /dev/md0"
modprobe brd rd_nr=4 rd_size=131072
check "mdadm --create /dev/md0 (RAID-5, 4 x 128 MiB)" \
	mdadm --create /dev/md0 --run --quiet --level=5 --raid-devices=4 --assume-clean \
	/dev/ram0 /dev/ram1 /dev/ram2 /dev/ram3
# DKMS runs depmod -a at the install and again at the removal: over
# Debian's 4,200 xz-compressed modules, 135 s each under TCG (45 of
# dkms's 3-second dots in the run of 24c53d8, whose CI ran out of time
# there).  The subtrees of modules this guest never loads (nothing here
# is loaded after the quick start but dm-remap and what it depends on,
# in drivers/md) are hidden under empty tmpfs mounts in the guest, some
# 3,300 modules: depmod reads the rest.  The modules already loaded
# (9p, overlay, brd, raid456) stay loaded.
hidden=0
for d in drivers/media drivers/net drivers/iio drivers/usb drivers/platform \
	drivers/hid drivers/hwmon drivers/input drivers/comedi drivers/mtd \
	drivers/watchdog drivers/misc drivers/video drivers/gpu drivers/i2c \
	drivers/infiniband drivers/leds drivers/thermal drivers/bluetooth sound net; do
	p=/lib/modules/$krel/kernel/$d
	[ -d "$p" ] || continue
	hidden=$((hidden + $(find "$p" -name '*.ko*' | wc -l)))
	mount -t tmpfs -o size=1M,mode=0755 dmr-hide "$p" || bad "hide $p from depmod"
done
echo "(depmod: $hidden modules hidden, $(find /lib/modules/"$krel" -name '*.ko*' | wc -l) left)"
echo "== README quick start"
t0=$SECONDS
while IFS= read -r cmd; do
	echo "\$ $cmd"
	if [[ $cmd == man\ * ]]; then	# a page, not a pager
		check "quick start: $cmd" bash -c "MANPAGER=cat $cmd | grep -q ." </dev/null
	elif [[ $cmd == apt-get\ * ]]; then	# the user answers its "Do you want to continue?"
		check "quick start: $cmd" bash -c "$cmd" <<<Y
	else
		check "quick start: $cmd" bash -c "$cmd" </dev/null
	fi
done <<<"$qs"
echo "(the quick start took $((SECONDS - t0))s)"
check "quick start: it installed both packages" \
	dpkg-query -W -f '${Status}\n' dm-remap-tools dm-remap-dkms
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
check "dm-remap loaded, remap target registered" \
	sh -c 'grep -q "^dm_remap " /proc/modules && dmsetup targets | grep -q "^remap "'
for f in /usr/sbin/remapctl /usr/sbin/bm-flash /usr/sbin/dm-remap-compare /usr/bin/remap-sim \
	/lib/systemd/system/dm-remap.service /lib/udev/rules.d/69-dm-remap.rules \
	/usr/share/man/man8/remapctl.8.gz /usr/src/dm-remap-"$ver"/dkms.conf; do
	check "installed: $f" test -e "$f"
done

echo "== remapctl (installed): data written through the target reads back"
check "remapctl create t0 /dev/md0" /usr/sbin/remapctl create t0 /dev/md0
check "dmsetup table t0: a remap target" sh -c 'dmsetup table t0 | grep -q " remap "'
# (test -b first: dd to a /dev/mapper name that is not there makes a file)
check "write and read back 4 MiB through t0" bash -c '
	test -b /dev/mapper/t0 && head -c 4194304 /dev/urandom > /tmp/pattern &&
	dd if=/tmp/pattern of=/dev/mapper/t0 bs=1M oflag=direct status=none &&
	cmp <(dd if=/dev/mapper/t0 bs=1M count=4 iflag=direct status=none) /tmp/pattern'
/usr/sbin/remapctl status t0
check "remapctl remove t0" /usr/sbin/remapctl remove t0
check "remapctl check /dev/md0: clean" /usr/sbin/remapctl check /dev/md0
check "rmmod dm-remap" rmmod dm-remap
mdadm --stop /dev/md0
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
