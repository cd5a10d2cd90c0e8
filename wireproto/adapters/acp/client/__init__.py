"""The client role of ACP: driving an agent.

* :mod:`.connection`: :class:`~.connection.ClientConnection`, the requests to the agent.
* :mod:`.turn`: :class:`~.turn.PromptTurn`, one prompt and its stream of updates.
* :mod:`.state`: the sessions the client knows, the handlers' types.
* :mod:`.serve`: the agent's requests to the client (permissions, files, terminals).
* :mod:`.fs`, :mod:`.terminals`, :mod:`.elicitation`: the default handlers.
* :mod:`.ext`: the default deadlines and extension calls.
* :mod:`.mcpservers`: short constructors for MCP server entries.
* :mod:`.connect`: :func:`~.connect.connect_acp`.
"""
