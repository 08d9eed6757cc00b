"""fsdp_mfu: see README.md beside this file."""
