"""Stand-in processes and servers used by tests at a process or network boundary."""
