"""What iowatch says of a LAVA board's state (plain data, no HTTP client: the
web app's models and pages import it on a server without the `lava` extra)."""

BOARD_LABELS = ("idle", "running", "offline", "bad health")
