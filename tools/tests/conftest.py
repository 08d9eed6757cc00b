import sys
from pathlib import Path

# planted_benches.py lives here; spawned workers inherit sys.path from the test process.
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
