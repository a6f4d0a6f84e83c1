"""iowatch parse (placeholder until it is written)."""


def register(sub):
    pass
