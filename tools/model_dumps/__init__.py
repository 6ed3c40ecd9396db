"""Graph-dump fixtures from Hugging Face models exported as AutoDeploy exports them (tools/make_model_dumps.py)."""
