# SPDX-License-Identifier: GPL-2.0-only
#
# dm-remap top-level Makefile.
#
#   make                 module (against KDIR) and userspace tools
#   make module          dm-remap/dm-remap.ko against KDIR, and the flashsim
#                        test target
#   make flashsim        tests/flashsim/dm-flashsim.ko against KDIR (the
#                        test-only flash timing target the VM tests load)
#   make tools           tools/remapctl and friends
#   make man             man pages (man/*.rst, rst2man) into man/build
#   make check           the whole test suite (README's test command)
#   make demo            the main job in a VM
#   make bench           bare / dm-linear / remapped, medians of 3 rounds (VM)
#   make profile         perf profile, CPU ns per 4 KiB block (VM)
#   make transcript      Documentation/dm-remap-transcript.txt from a real run (VM)
#   make sparse          sparse (make C=2) on the kernel sources, 6.12 and 6.1
#   make fuzz            the fuzz targets, DMR_FUZZ_SECONDS (default 300) each
#   make deps            install what building and installing need (idempotent:
#                        compiler, libblkid-dev, dkms, packaging tools, rst2man)
#   make test-deps       that and what the tests need (kernel image and source,
#                        QEMU, clang, virtme-ng from PyPI...): make check,
#                        demo, bench and the other VM targets call it
#   make install         module, tools and man pages
#   make install-man     the man pages alone (DESTDIR, PREFIX as tools/)
#   make deb             Debian packages dm-remap-tools and dm-remap-dkms from
#                        the tracked tree, into $(DMR_CACHE)/deb (DEB_OUT)
#
# KDIR defaults to the running kernel's build directory.

KDIR ?= /lib/modules/$(shell uname -r)/build
DMR_CACHE ?= $(HOME)/.cache/dm-remap
DEB_OUT ?= $(DMR_CACHE)/deb
export DMR_CACHE

.PHONY: all module flashsim tools man check demo bench profile transcript deps test-deps kunit vm-test sparse fuzz clean install install-man deb

all: module tools

module: flashsim
	$(MAKE) -C $(KDIR) M=$(CURDIR) CONFIG_DM_REMAP=m modules

# Its own kbuild directory (not in ./Kbuild): the dkms package and the
# install target stay dm-remap alone.
flashsim:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/flashsim modules

tools:
	$(MAKE) -C tools

man:
	$(MAKE) -C man

deps:
	bash scripts/deps.sh build

test-deps:
	bash scripts/deps.sh test

check: test-deps
	bash scripts/check.sh

kunit: test-deps
	bash tests/kunit/run.sh

vm-test: test-deps
	bash scripts/check.sh vm

demo: test-deps
	bash scripts/demo.sh

bench: test-deps
	bash scripts/bench.sh

profile: test-deps
	bash scripts/profile.sh

transcript: test-deps
	bash scripts/transcript.sh

sparse: test-deps
	bash scripts/sparse.sh

fuzz: test-deps
	bash tests/fuzz/run.sh $${DMR_FUZZ_SECONDS:-300}

# modules_install skips depmod where KDIR has no System.map (Debian's
# headers packages ship none), and modprobe then cannot find dm-remap, so
# run depmod here, for the release KDIR was configured for (not
# necessarily the running kernel).  modprobe dm-remap then loads dm-mod
# and libcrc32c first.
install: module tools install-man
	$(MAKE) -C $(KDIR) M=$(CURDIR) CONFIG_DM_REMAP=m modules_install
	release=$$(cat $(KDIR)/include/config/kernel.release) && \
		depmod -a $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $$release
	$(MAKE) -C tools install

install-man:
	$(MAKE) -C man install

# debian/, built in a copy under DMR_CACHE (scripts/deb.sh); nothing is
# installed on this machine
deb:
	bash scripts/deb.sh $(DEB_OUT)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || \
		find . -name '*.o' -o -name '*.ko' -o -name '*.mod*' | xargs rm -f
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/flashsim clean 2>/dev/null || true
	$(MAKE) -C tools clean
	$(MAKE) -C man clean
