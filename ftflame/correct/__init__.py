"""The correction stage: the hook cost chosen or calibrated (calibration),
the corrected figures (corrections), the balance sheet against measured
totals (balance, measured)."""
