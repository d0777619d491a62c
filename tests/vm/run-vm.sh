#!/bin/bash
# Run a command as root inside a throw-away VM booting Debian's 6.12 kernel
# (virtme-ng: the guest sees the host root filesystem read-only over 9p).
#
#   tests/vm/run-vm.sh [--mem MiB] [--cpus N] [--timeout SECONDS] [--overlay DIR]...
#                      OUTDIR -- COMMAND [ARGS...]
#
# In the guest: cwd = repo root, DMR_OUT=OUTDIR (the only writable shared
# directory; /tmp is a guest-RAM overlay), PYTHONDONTWRITEBYTECODE=1,
# DMR_IN_VM=1. The repo itself is read-only in the guest: build on the host.
# Results in OUTDIR: guest.log (COMMAND stdout+stderr), guest-rc, dmesg.txt,
# console.log (serial console: boot log, panics; useful when guest-rc is missing).
# --overlay DIR (repeatable): DIR is writable in the guest, the writes going
# to an overlay in guest RAM (virtme-ng's --overlay-rwdir); the host's DIR is
# never written.  E.g. --overlay /usr --overlay /etc --overlay /var for dpkg.
#
# Env: DMR_VM_KERNEL=/path/to/vmlinuz (default /boot/vmlinuz-$KREL612 from
# ${DMR_CACHE:-~/.cache/dm-remap}/kernels.env), DMR_VM_ACCEL=tcg|kvm|auto,
# DMR_VM_APPEND="kernel boot options".
# Exit: 0 ok, 1 test failure (rc != 0 or kernel splat), 2 VM infrastructure failure.
set -euo pipefail

usage() {
	echo "usage: $0 [--mem MiB] [--cpus N] [--timeout SECONDS] [--overlay DIR]... OUTDIR -- COMMAND [ARGS...]" >&2
	exit 2
}
die() { echo "run-vm: $*" >&2; exit 2; }

mem=2048 cpus=2 tmo=1800
overlays=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--mem) mem=${2:?}; shift 2 ;;
	--cpus) cpus=${2:?}; shift 2 ;;
	--timeout) tmo=${2:?}; shift 2 ;;
	--overlay) overlays+=("${2:?}"); shift 2 ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) break ;;
	esac
done
[[ $# -ge 3 && $2 == -- ]] || usage
out=$1
shift 2

repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Paths end up in qemu -fsdev options and on the kernel command line.
[[ $out != *[[:space:]=,]* && $repo != *[[:space:]=,]* ]] ||
	die "OUTDIR/repo path must not contain whitespace, '=' or ','"
ovl_args=() ovl_vng=()
for d in "${overlays[@]}"; do
	[[ $d == /* && -d $d && $d != *[[:space:]=,]* ]] || die "--overlay $d: not an absolute directory path"
	[[ $out != "$d" && $out != "$d"/* ]] || die "--overlay $d would hide OUTDIR $out"
	ovl_args+=(--overlay "$d")
	ovl_vng+=(--overlay-rwdir "$d")
done

kernel=${DMR_VM_KERNEL:-}
if [[ -z $kernel ]]; then
	envf=${DMR_CACHE:-$HOME/.cache/dm-remap}/kernels.env
	[[ -r $envf ]] || die "$envf missing: run scripts/deps.sh (or set DMR_VM_KERNEL)"
	krel=$(sed -n 's/^KREL612=["'\'']\{0,1\}\([^"'\'']*\).*/\1/p' "$envf")
	[[ -n $krel ]] || die "no KREL612 in $envf"
	kernel=/boot/vmlinuz-$krel
fi
[[ -r $kernel ]] || die "kernel $kernel not readable"
command -v vng >/dev/null || die "vng (virtme-ng) not found"

# One user of TCG VMs at a time on this machine (guests beside other
# guests or builds push each other past their timeouts): every
# run-vm.sh, from any clone, waits for this lock.  DMR_VM_LOCK=none
# turns it off for a caller that already holds it: make check's VM pool
# (scripts/check.sh), which runs its own guests one per core.
lock=${DMR_VM_LOCK:-/tmp/dm-remap-vm.lock}
if [[ $lock != none ]]; then
	exec 9>>"$lock" || die "cannot open the VM lock $lock"
	if ! flock -n 9; then
		echo "run-vm: waiting for another VM (lock $lock)" >&2
		flock 9
	fi
fi

# Quirks: no virtiofsd on this host -> --force-9p. KVM is unusable here
# (nested KVM: qemu dies on an MSR assertion with -cpu host, or the guest
# spins on "KVM internal error"), so TCG is the default (~30-60 s boot).
base=(--run "$kernel" --force-9p)
[[ -z ${DMR_VM_APPEND:-} ]] || base+=(--append "$DMR_VM_APPEND")
base+=("${ovl_vng[@]}")
accel=${DMR_VM_ACCEL:-tcg}
if [[ $accel == auto ]]; then
	if timeout -k 5 60 vng "${base[@]}" --exec true </dev/null >/dev/null 2>&1; then
		accel=kvm
	else
		echo "run-vm: KVM probe failed, using TCG" >&2
		accel=tcg
	fi
fi
case $accel in
tcg) base+=(--disable-kvm) ;;
kvm) ;;
*) die "DMR_VM_ACCEL must be tcg, kvm or auto" ;;
esac

rm -f "$out"/guest-rc "$out"/dmesg.txt "$out"/guest.log "$out"/console.log \
	"$out"/guest-started
# Guest-side wrapper. Writes guest-rc last, so its presence also means
# dmesg.txt was captured. Exits 0: guest-rc is the source of truth.
guest_sh=$out/.run-vm-guest.sh
cat >"$guest_sh" <<'EOF'
: >"$2/guest-started"
cd "$1" || exit 1
export DMR_OUT=$2 DMR_IN_VM=1 PYTHONDONTWRITEBYTECODE=1
shift 2
echo 5 >/proc/sys/kernel/printk # console: warnings and worse only
"$@" </dev/null 2>&1 | tee "$DMR_OUT/guest.log"
rc=${PIPESTATUS[0]}
dmesg >"$DMR_OUT/dmesg.txt"
echo "$rc" >"$DMR_OUT/guest-rc"
sync
EOF
# vng base64-encodes --exec, so one level of shell quoting is enough.
exec_cmd=$(printf '%q ' bash "$guest_sh" "$repo" "$out" "$@")

# --verbose sends the serial console (loglevel 7 during boot) to vng's stderr.
vng_args=("${base[@]}" --rwdir "$out=$out" --memory "${mem}M" --cpus "$cpus"
	--verbose --exec "$exec_cmd")
echo "run-vm: vng ${vng_args[*]}" >&2

# Quirk: qemu re-opens /proc/self/fd/{1,2} as "file" chardevs (O_TRUNC, own
# offset, several opens per fd), which truncates/garbles a regular file.
# So both go through pipes. timeout kills its whole process group (vng and
# qemu); it runs in the background so Ctrl-C can be forwarded to it.
exec 3> >(cat)
pipes=($!)
exec 4> >(cat >"$out/console.log")
pipes+=($!)
start=$SECONDS
cd "$repo"
timeout -k 20 "$tmo" vng "${vng_args[@]}" </dev/null >&3 2>&4 3>&- 4>&- &
vm=$!
interrupted=0
trap 'interrupted=1; kill -TERM "$vm" 2>/dev/null || true' INT TERM HUP
vrc=0
wait "$vm" || vrc=$?
while kill -0 "$vm" 2>/dev/null; do wait "$vm" || vrc=$?; done
trap - INT TERM HUP
exec 3>&- 4>&-
wait "${pipes[@]}" 2>/dev/null || true # let the output pipes drain
elapsed=$((SECONDS - start))

fail() {
	echo "run-vm: FAIL: $2 (vng rc=$vrc, ${elapsed}s, see $out)" >&2
	exit "$1"
}
console_tail() { echo "--- tail of $out/console.log ---" >&2; tail -n 40 "$out/console.log" >&2 || true; }

[[ $interrupted == 0 ]] || fail 2 "interrupted"
if [[ $vrc == 124 || $vrc == 137 ]]; then
	console_tail
	fail 2 "VM timed out after ${tmo}s and was killed"
fi
if [[ ! -s $out/guest-rc ]]; then
	console_tail
	# Quirk: under TCG the guest kernel very rarely oopses while booting
	# (int3 in text patching), before anything of ours runs.  Boot again,
	# once; a guest that died after starting the command is a failure.
	if [[ ! -e $out/guest-started && -z ${DMR_VM_RETRIED:-} ]]; then
		echo "run-vm: the guest died before running the command; booting again (once)" >&2
		DMR_VM_RETRIED=1 exec bash "$repo/tests/vm/run-vm.sh" --mem "$mem" \
			--cpus "$cpus" --timeout "$tmo" "${ovl_args[@]}" "$out" -- "$@"
	fi
	fail 2 "no guest-rc: guest crashed, panicked or never ran the command"
fi
grc=$(<"$out/guest-rc")
echo "run-vm: boot+run ${elapsed}s ($accel, ${mem}MiB, ${cpus} cpus), guest rc=$grc" >&2
# the whole boot: the console has what the ring buffer may have lost
if ! python3 "$repo/tests/integration/kernel_log.py" "$out/console.log" "$out/dmesg.txt" >&2; then
	fail 1 "guest kernel reported problems (lines above, logs $out/console.log, dmesg.txt)"
fi
[[ $grc == 0 ]] || fail 1 "command exited with $grc"
exit 0
