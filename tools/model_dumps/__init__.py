"""Graph-dump fixtures from Hugging Face models exported as AutoDeploy exports them.

The command line is tools/make_model_dumps.py.
"""
