"""How to show and exchange a behaviour.

``trace`` (the one trace type), ``values``, ``itf`` and ``io`` (ITF as Apalache and Quint write it,
our JSON and msgpack, all read back equal), ``render`` and ``views`` (rich step-by-step output with
per-broker logs), ``diagram`` (sequence diagrams: Mermaid, DOT, SVG), ``graph`` (the explored state
graph as DOT), ``scenario`` and ``replay`` (hand-written interleavings and replay by action against
a protocol version), ``explain`` (one paragraph per violation) and ``cli`` (``kmc trace ...``).
"""
