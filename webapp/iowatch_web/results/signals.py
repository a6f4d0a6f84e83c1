"""Signals the store sends, so apps that read new runs need no hook in ingest."""
from django.dispatch import Signal

# Sent with run=<Run> inside the transaction that stores a new run. Receivers
# queue durable follow-up work (regressions/work.py), which commits or rolls
# back with the run; they must be quick and do no work of their own here. An
# exception aborts the store.
run_stored = Signal()
