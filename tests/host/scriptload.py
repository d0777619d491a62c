# SPDX-License-Identifier: GPL-2.0-only
"""A script of the repository as a module, for the host tests: the guest
scripts and tools/compare have no .py suffix or live outside any package.
Importing one runs nothing but its definitions (their mains are guarded),
and leaves no bytecode next to it."""
import importlib.machinery
import importlib.util
import sys


def load_script(path, name):
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = keep
    return mod
