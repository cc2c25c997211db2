// py_record.h — the recording calls Python code makes in its hot loops,
// written against CPython's C API rather than pybind11: zones (a context
// manager and a decorator), instants, counters and steps. Each costs a C call
// and one event; names and call sites are interned once (py_names.h).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace ringprof::python {

// Adds zone(), instant(), counter(), step() and the Zone and ZonedFunction
// types to `module`. Returns false with a Python error set on failure.
bool add_record_api(PyObject* module);

}  // namespace ringprof::python
