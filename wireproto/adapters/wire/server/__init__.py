"""The server role of Wire: serving an agent's session to one client.

* :mod:`.connection`: :class:`~.connection.WireServer`, the method table, turns, shutdown.
* :mod:`.channel`: :class:`~.channel.WireChannel`, the client as the agent sees it
  (events out, requests to the client).
* :mod:`.questions`: the neutral multi-question API as ``QuestionRequest``.
"""
