"""The guardian and worker processes of :func:`hsched.live`.

Started by the live agent as ``python -I -S _live_boot.py EXTENSION ROLE
ARGS...``: loads the extension module ``EXTENSION`` alone, from its path
(not the ``hsched`` package, whose import would load pandas for nothing),
and hands the process to the live crate's main for ``ROLE``
(``__guardian`` or ``__worker``, as the command line's hidden
subcommands), which ends it.

Why the interpreter and not the ``hsched`` binary: the binary may not be
installed, or be another version, while these processes must speak the
agent's protocol (the guardian's lines, the worker's spec and job report)
exactly; the extension module that runs the agent holds the same code.
``-I -S``: no user site, no environment variables, no ``site``, so the
process starts in milliseconds and loads nothing but the standard
library's import machinery and the extension.
"""

import sys
from importlib.util import module_from_spec, spec_from_file_location


def main() -> None:
    """Never returns: the role's main ends the process."""
    if len(sys.argv) < 3:
        sys.stderr.write("usage: _live_boot.py EXTENSION (__guardian|__worker) ARGS...\n")
        sys.exit(2)
    extension, role, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    spec = spec_from_file_location("hsched._hsched", extension)
    if spec is None or spec.loader is None:
        sys.stderr.write(f"_live_boot.py: {extension}: not an extension module\n")
        sys.exit(2)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    module._live_process(role, args)


if __name__ == "__main__":
    main()
