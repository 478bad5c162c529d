"""Small primitives every floor may use: clock and ids, PORTAGENT_HOME, budgets, pricing, versions.

Imports only ``contracts`` (and the standard library); never a vendor SDK, never a higher floor.
"""
