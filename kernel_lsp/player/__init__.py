"""What runs beside the implementation, in its process: nothing here imports kernel_lsp (a test says so),
so these files can be copied under neutral names into the player's folder and run as plain files."""
