"""The results app: the store of runs, cells, samples and artifacts, and the ingest API."""
