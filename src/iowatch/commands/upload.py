"""iowatch upload (placeholder until it is written)."""


def register(sub):
    pass
