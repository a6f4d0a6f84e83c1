"""iowatch serve (placeholder until it is written)."""


def register(sub):
    pass
