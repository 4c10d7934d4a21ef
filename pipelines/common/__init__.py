"""What every stage shares: configuration, paths, the table contract, I/O, models, offline."""
