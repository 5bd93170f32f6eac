"""Names of the files in a collect.sh run directory (collect/README.md).

Kept apart from ftflame.correct.calibration so that the CLI's --help, which names
them, does not import numpy."""

CALIBRATION_FILE = "calibration.json"
# calibrate.sh's three recordings: the NULL procedure alone, then the
# dispatcher hooked alone and with its whole graph
CALIBRATION_TRACES = ("calib-null.dat", "calib-dispatch-root.dat", "calib-dispatch-full.dat")
