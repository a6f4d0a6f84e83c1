"""One module per iowatch subcommand; see iowatch.cli."""
