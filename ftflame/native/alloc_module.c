/* ftflame._alloc: allocator tuning for the ftflame command (ftflame/cli.py).
 *
 * An extension of its own so that the command can tune malloc before it
 * imports anything heavy, without loading the trace reader (parse._core),
 * and so that a library user importing ftflame never gets it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <malloc.h>

static PyObject *py_keep_freed_memory(PyObject *self, PyObject *noargs)
{
	/* Blocks up to 256 MiB from the heap, where freed memory is reused,
	 * rather than from fresh mappings given back on free: a report allocates
	 * and frees ~100 MB in big arrays (the builder's tables, their export,
	 * the Profile's columns), and each page the kernel hands out anew costs
	 * a fault. 50 ms less on a 3 M-event report, for 35 MB more peak RSS
	 * (memory kept that a later block does not fit). For a short-lived
	 * command only. */
	int ok = mallopt(M_MMAP_THRESHOLD, 256 << 20);
	return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
	{ "keep_freed_memory", py_keep_freed_memory, METH_NOARGS,
	  "keep_freed_memory() -> bool: glibc serves blocks up to 256 MiB from the heap, where freed "
	  "memory is reused (mallopt M_MMAP_THRESHOLD): fewer page faults in a short-lived process, "
	  "more peak RSS; the ftflame command calls it" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_alloc", "ftflame's allocator tuning for the ftflame command", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__alloc(void)
{
	return PyModule_Create(&moduledef);
}
