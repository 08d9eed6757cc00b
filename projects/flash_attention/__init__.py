"""flash_attention: see README.md beside this file."""
