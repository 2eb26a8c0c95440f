"""dashboard layer."""
