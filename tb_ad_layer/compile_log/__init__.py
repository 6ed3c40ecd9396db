"""torch.compile structured logs (``TORCH_TRACE=/dir``) as graphs the layer rules read.

``records`` reads the log files into records (event, compile id, attempt, payload);
``fx_code`` turns one graph payload (the readable Python that ``print_readable`` writes) into a
:class:`~tb_ad_layer.dump.graph.Graph`, its parameter inputs named the way a dump names weights;
``torch_trace`` gathers every compiled graph of a directory into stages (Dynamo, AOT, Inductor
post-grad), with the graph breaks and recompilations the log records.
"""
