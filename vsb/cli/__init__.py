"""The thin command line: one module per subcommand group."""
