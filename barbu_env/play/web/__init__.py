"""The browser table (``barbu serve``): play a game against agents by clicking cards, and
step through game records trick by trick.

``barbu_env.play.web.server`` is a FastAPI app (the ``web`` extra: ``pip install -e '.[web]'``)
served by uvicorn; the page is plain HTML, CSS and JavaScript in ``static/``, with no build
step. Only the CLI's ``serve`` command imports the server.
"""
