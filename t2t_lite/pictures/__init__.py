"""Pictures: attention maps (data model, PNG grid, HTML page) and training curves."""
