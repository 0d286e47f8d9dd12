"""The documentation's generated pages (``python3 -m docs.generate``) and its benchmark figures."""
