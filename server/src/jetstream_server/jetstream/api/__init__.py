"""The `$JS.API`: the route table, its handlers and the dispatcher.

Modules, top to bottom (the import contract in setup.cfg checks the order):
- dispatch.py: the `$JS.API.>` entry: prefix, route, JSON envelope, errors
- routes.py: the route table, every served subject -> handler -> response type
- account.py, streams.py, consumers.py, direct.py: the handlers, one module per area
- replies.py: the JSON answer and the API audit advisory
- host.py: `ApiHost`, what handlers may ask of the engine (the seam that keeps
  the engine out of this package); request.py: the request and its JSON body;
  views.py: stream and message JSON
"""
