"""The review dashboard (`formalbench review`): a local web application over a formalize run
or a construct run (dispatched on the run kind: `construct.sqlite` marks a construct run).

- `app`: the FastAPI application (`create_app`), pages rendered on the server;
- `views`: what a problem page shows and in which order (compiled first, then the summary's rank);
- `decide`: the editor form, turned into a versioned decision (`store.review`);
- `checker`: re-checks of edited text with the run's own backend;
- `guard`: access token, loopback host names, same-origin and form-token checks on writes;
- `export`: the accepted problems as a `Task` dataset (JSONL) with the whole trail;
- `construct_app`, `construct_view`, `construct_export`: the pages, the records and the export
  of a construct run (exercises, source stages, blocks with their compile rounds);
- `server`: uvicorn on loopback unless a token guards another interface.
"""
