/* pack_rows and nest_calls of ftflame.report._rowfmt (pbrows_module.c). */
#ifndef FTF_PBROWS_MODULE_H
#define FTF_PBROWS_MODULE_H

#include <Python.h>

PyObject *ftf_py_pack_rows(PyObject *self, PyObject *args);
PyObject *ftf_py_nest_calls(PyObject *self, PyObject *args);
PyObject *ftf_py_evented_json(PyObject *self, PyObject *args);

#endif
