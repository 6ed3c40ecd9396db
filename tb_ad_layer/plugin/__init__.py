"""The TensorBoard plugin ("AD Layers" tab).

``plugin.py`` (the route table and the TBPlugin) -> ``routes.py`` (a route as a werkzeug app)
-> ``data.py`` (every API answer, validated and cached) -> ``discovery.py`` (run stores under the
logdir) and the store reader; ``compare.py`` and ``timeline.py`` compute their endpoints'
answers; ``static_files.py`` serves the built panel from ``static/``; ``responses.py`` frames
bodies for HTTP. Answers are records of :mod:`tb_ad_layer.contract`; docs/API.md describes them.
"""
