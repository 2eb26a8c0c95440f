"""`formalbench construct`: a benchmark from a textbook (CAM-Bench), one module per step."""
