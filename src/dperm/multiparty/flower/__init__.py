"""Multiparty training on Flower 1.41 (optional extra ``dperm[multiparty]``).

Importing this package does not import Flower; its modules do:

- ``engine``: :class:`~dperm.multiparty.flower.engine.FlowerSecureSum`, the
  SecAgg+ secure sum in one process, and :func:`~dperm.multiparty.flower.engine.load_flower`;
- ``grid``: the message grids and one SecAgg+ round over any of them;
- ``app``: the party's ClientApp and the coordinator's ServerApp (PSGD, 004 Alg. 1);
- ``newton``: the few-round Newton protocol over the same grid;
- ``simulation``: the same apps under Flower's simulation engine (Ray);
- ``deploy``: ``dperm party serve`` / ``dperm coordinate``'s processes
  (keys, settings, the app bundle, starting and supervising Flower);
- ``superlink``, ``supernode``, ``party_runtime``: the locked-down Flower
  processes a deployment runs;
- ``_adapter``: every touch of Flower's internals (the version guard and the
  patches each of those processes applies, scoped, around what needs them);
  a Flower upgrade is this one file. Importing any of these modules patches
  nothing in Flower.
"""
