"""The live view: a web page of a running town (map, event feed, agents' state), served by
``auratown daemon --http HOST:PORT`` or ``auratown view``.

``deploy.web.server`` (``LiveView``, ``start_live_view``) and ``deploy.web.feed`` (``TownFeed``)
import the bus; this package's ``__init__`` and ``command`` import only the standard library, so
the command line starts fast.
"""
