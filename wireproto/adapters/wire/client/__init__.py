"""The client role of Wire: driving a Wire server.

* :mod:`.connection`: :class:`~.connection.WireClient`, the requests to the server.
* :mod:`.turn`: :class:`~.turn.WireTurn`, one prompt turn as the client sees it.
* :mod:`.requests`: how the client answers the server's requests.
"""
