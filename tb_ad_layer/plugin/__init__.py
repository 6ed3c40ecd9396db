"""The TensorBoard plugin ("AD Layers" tab).

``plugin.py`` (routes and thin handlers) -> ``data.py`` (every API answer, validated and cached)
-> ``discovery.py`` (run stores under the logdir) and the store reader; ``compare.py`` and
``timeline.py`` compute their endpoints' bodies; ``static_files.py`` serves the built panel from
``static/``; ``responses.py`` frames bodies for HTTP. The contract is docs/API.md.
"""
