"""The model every stage reads: the Profile (model/profile.py) and the
errors bad input raises (model/errors.py)."""
