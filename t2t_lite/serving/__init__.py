"""Serving: SavedModel export."""
