"""ctest's entry for the Python tests: runs pytest with the given arguments,
or exits 77 (skipped) where pytest or NumPy is not installed (the GPU
machine's Python may have neither; CI installs both through
scripts/setup.sh)."""
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print("python tests skipped: %s (Debian: python3-pytest python3-numpy)" % e)
    sys.exit(77)

sys.exit(pytest.main(sys.argv[1:]))
