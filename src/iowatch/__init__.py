"""iowatch: storage performance-regression CI for Linux kernel changes."""

__version__ = "0.1.0"
