"""checking layer."""
