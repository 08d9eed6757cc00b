"""oss_pr_notes: see README.md beside this file."""
