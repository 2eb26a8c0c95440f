"""`formalbench serve`: the strict verifier behind Kimina Lean Server's HTTP API.

Modules, one job each: `models` (the requests), `answers` (Kimina-shaped answers from our
records), `engine` (the verifier the CLI uses, on worker threads), `queue` (admission and
429), `metrics` (counters for `/metrics`), `app` (routes, key, limits, request ids), `server`
(uvicorn, the key rule, a clean stop), `client` (an async client), `reward` (a reward
function for RL trainers).
"""
