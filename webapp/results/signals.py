"""Signals the store sends, so apps that read new runs need no hook in ingest."""
from django.dispatch import Signal

# Sent with run=<Run> once a newly stored run's transaction has committed.
run_stored = Signal()
