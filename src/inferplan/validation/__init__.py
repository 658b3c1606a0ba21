"""Predictions against the measured points shipped in the catalogue."""
