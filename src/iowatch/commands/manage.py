"""iowatch manage (placeholder until it is written)."""


def register(sub):
    pass
