import sys
from pathlib import Path

# Test helpers that are modules of their own (live_server) import from here.
sys.path.insert(0, str(Path(__file__).parent))
