/* Protocol-buffer rows (pbrows.c): ftflame.report._rowfmt.pack_rows. */
#ifndef FTF_PBROWS_H
#define FTF_PBROWS_H

#include <Python.h>

PyObject *ftf_py_pack_rows(PyObject *self, PyObject *args);
PyObject *ftf_py_nest_calls(PyObject *self, PyObject *args);

#endif
