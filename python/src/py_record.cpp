// py_record.cpp — zone(), instant(), counter(), zone_arg(), mark_collective() and
// step() for Python (py_record.h).
//
//   with ringprof.zone("load"): ...        a Zone object, entered and exited
//   @ringprof.zone("train_step")           a ZonedFunction wrapping the function
//   @ringprof.zone                         the same, named by __qualname__
//
// A Zone remembers whether each of its entries was recorded (a bit per
// nesting level), so a zone is ended only after a begin that was recorded,
// even when one Zone object is entered again inside itself.
#include "py_record.h"

#include <structmember.h>

#include <cstdint>
#include <string_view>

#include "py_names.h"
#include "zone_bits.h"
#include "ringprof/ringprof.h"

namespace ringprof::python {
namespace {

// ---- where a call came from ----

// A direct-mapped cache in front of site_for(): the common call finds its
// location by three pointer compares (code object, instruction, name object).
// An entry's code object and name stay alive in the site table, so their
// addresses cannot be reused while the entry holds them.
struct SiteCacheEntry {
  PyCodeObject* code;
  int lasti;
  PyObject* name;
  const SourceLocation* loc;
};
constexpr size_t kSiteCacheSlots = 1024;
SiteCacheEntry g_site_cache[kSiteCacheSlots];

// The location for `name` (may be null) at the Python code that called us:
// C functions get no frame of their own, so the current frame is the caller's.
const SourceLocation* caller_site(PyObject* name) {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (!frame) return nullptr;
  PyCodeObject* code = PyFrame_GetCode(frame);
#if PY_VERSION_HEX >= 0x030B0000
  const int lasti = PyFrame_GetLasti(frame);  // bytes
#elif PY_VERSION_HEX >= 0x030A0000
  const int lasti = frame->f_lasti * static_cast<int>(sizeof(_Py_CODEUNIT));  // 3.10 counts instructions
#else
  const int lasti = frame->f_lasti;
#endif
  const size_t slot = ((reinterpret_cast<uintptr_t>(code) >> 4) ^ static_cast<size_t>(lasti) * 31 ^
                       (reinterpret_cast<uintptr_t>(name) >> 4)) % kSiteCacheSlots;
  SiteCacheEntry& e = g_site_cache[slot];
  const SourceLocation* loc;
  if (e.code == code && e.lasti == lasti && e.name == name && e.loc) {
    loc = e.loc;
  } else {
    bool held = false;
    loc = site_for(code, lasti, name, &held);
    // Only objects the site table keeps alive may be cached by their address.
    if (loc && held) e = {code, lasti, name, loc};
  }
  Py_DECREF(code);
  return loc;
}

// ---- Zone: the context manager ----

struct ZoneObject {
  PyObject_HEAD
  const SourceLocation* loc;  // null: past the site cap, record `name` inline
  PyObject* name;             // the name given (null: unnamed), kept for decorating
  // The entries of the thread that entered it first (its owner, until its
  // depth is back to 0): bit d says whether the entry at depth d was recorded.
  // Other threads entering the same object meanwhile (a module-level Zone
  // used by several threads) keep their bits in their own thread's stack.
  ZoneBits entries;
  unsigned long owner;        // PyThread_get_thread_ident() of the owner; 0: none
};

PyTypeObject* g_zone_type = nullptr;
PyTypeObject* g_zoned_function_type = nullptr;

bool begin_zone(const SourceLocation* loc, PyObject* name) {
  name_thread_once();
  if (loc) return zone_begin(loc);
  if (!name) return zone_begin(std::string_view("<python>"));
  const std::string_view text = utf8(name);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return zone_begin(text);
}

// Entries of Zone objects another thread owns, made on this thread.
thread_local ZoneBits t_foreign_entries;

PyObject* zone_enter(PyObject* self_obj, PyObject*) {
  auto* self = reinterpret_cast<ZoneObject*>(self_obj);
  const bool on = begin_zone(self->loc, self->name);
  const unsigned long me = PyThread_get_thread_ident();
  if (self->entries.depth == 0) self->owner = me;
  (self->owner == me ? self->entries : t_foreign_entries).push(on);
  Py_INCREF(self_obj);
  return self_obj;
}

PyObject* zone_exit(PyObject* self_obj, PyObject* const*, Py_ssize_t) {
  auto* self = reinterpret_cast<ZoneObject*>(self_obj);
  bool recorded;
  if (self->entries.depth > 0 && self->owner == PyThread_get_thread_ident()) {
    recorded = self->entries.pop();
    if (self->entries.depth == 0) self->owner = 0;
  } else {
    recorded = t_foreign_entries.pop();
  }
  if (recorded) zone_end();
  Py_RETURN_FALSE;  // never swallows the exception
}

PyObject* decorate(PyObject* func, PyObject* name);

// zone("name") used as a decorator: @ringprof.zone("name").
PyObject* zone_call(PyObject* self_obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<ZoneObject*>(self_obj);
  PyObject* func = nullptr;
  if ((kwargs && PyDict_Size(kwargs) > 0) || !PyArg_UnpackTuple(args, "zone", 1, 1, &func)) {
    PyErr_SetString(PyExc_TypeError, "ringprof.zone(...) decorates one function: @ringprof.zone(\"name\")");
    return nullptr;
  }
  return decorate(func, self->name);
}

// Zone objects live for one `with`: a free list saves the allocator's round
// trip, as CPython's own short-lived objects do. GIL-protected.
constexpr int kZoneFreeListMax = 64;
ZoneObject* g_zone_free[kZoneFreeListMax];
int g_zone_free_count = 0;

void zone_dealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<ZoneObject*>(self_obj);
  Py_XDECREF(self->name);
  PyTypeObject* type = Py_TYPE(self_obj);
  if (g_zone_free_count < kZoneFreeListMax) {
    g_zone_free[g_zone_free_count++] = self;
  } else {
    type->tp_free(self_obj);
  }
  Py_DECREF(type);  // instances of heap types hold their type
}

PyMethodDef zone_methods[] = {
    {"__enter__", zone_enter, METH_NOARGS, "Begins the zone."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(zone_exit)), METH_FASTCALL,
     "Ends the zone (exceptions pass through)."},
    {nullptr, nullptr, 0, nullptr}};

PyObject* new_zone(const SourceLocation* loc, PyObject* name) {
  ZoneObject* z;
  if (g_zone_free_count > 0) {
    z = g_zone_free[--g_zone_free_count];
    PyObject_Init(reinterpret_cast<PyObject*>(z), g_zone_type);  // takes a reference to the type
  } else {
    z = PyObject_New(ZoneObject, g_zone_type);
    if (!z) return nullptr;
  }
  z->loc = loc;
  z->name = name;
  Py_XINCREF(name);
  z->entries = ZoneBits{};
  z->owner = 0;
  return reinterpret_cast<PyObject*>(z);
}

// ---- ZonedFunction: the decorator's wrapper ----

struct ZonedFunction {
  PyObject_HEAD
  PyObject* func;
  const SourceLocation* loc;
  PyObject* name;  // for the inline fallback past the site cap
  vectorcallfunc vectorcall;
  PyObject* dict;  // functools.update_wrapper's attributes
};

PyObject* zoned_vectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<ZonedFunction*>(self_obj);
  const bool on = begin_zone(self->loc, self->name);
  PyObject* result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
  if (on) zone_end();
  return result;
}

// Methods: bound like a plain function, so `self` reaches the wrapped one.
PyObject* zoned_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

int zoned_traverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<ZonedFunction*>(self_obj);
  Py_VISIT(Py_TYPE(self_obj));  // instances of heap types hold their type
  Py_VISIT(self->func);
  Py_VISIT(self->dict);
  return 0;
}

int zoned_clear(PyObject* self_obj) {
  auto* self = reinterpret_cast<ZonedFunction*>(self_obj);
  Py_CLEAR(self->func);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->name);
  return 0;
}

void zoned_dealloc(PyObject* self_obj) {
  PyObject_GC_UnTrack(self_obj);
  zoned_clear(self_obj);
  PyTypeObject* type = Py_TYPE(self_obj);
  type->tp_free(self_obj);
  Py_DECREF(type);
}

// Pickled by reference, as the function it wraps would be: the module
// attribute of its __qualname__ is this wrapper (multiprocessing, pickle).
PyObject* zoned_reduce(PyObject* self_obj, PyObject*) {
  return PyObject_GetAttrString(self_obj, "__qualname__");
}

PyMethodDef zoned_methods[] = {
    {"__reduce__", zoned_reduce, METH_NOARGS, "Pickles the function by its qualified name."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef zoned_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

bool is_generator_or_coroutine(PyObject* func) {
  PyObject* code = PyObject_GetAttrString(func, "__code__");
  if (!code) {
    PyErr_Clear();
    return false;
  }
  bool out = false;
  if (PyCode_Check(code)) {
    const int flags = reinterpret_cast<PyCodeObject*>(code)->co_flags;
    out = flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE);
  }
  Py_DECREF(code);
  return out;
}

PyObject* decorate(PyObject* func, PyObject* name) {
  if (!PyCallable_Check(func)) {
    PyErr_SetString(PyExc_TypeError, "ringprof.zone decorates a function; use `with ringprof.zone(\"name\"):` otherwise");
    return nullptr;
  }
  // A zone must close on the thread and at the depth it opened; a generator's
  // or coroutine's frames interleave with others on the same thread.
  if (is_generator_or_coroutine(func)) {
    PyErr_SetString(PyExc_TypeError,
                    "ringprof.zone cannot decorate a generator or coroutine function (its runs interleave with other "
                    "code on the thread); use `with ringprof.zone(...)` around its synchronous parts");
    return nullptr;
  }
  const SourceLocation* loc = site_for_function(func, name);
  if (PyErr_Occurred()) return nullptr;
  auto* w = PyObject_GC_New(ZonedFunction, g_zoned_function_type);
  if (!w) return nullptr;
  Py_INCREF(func);
  w->func = func;
  w->loc = loc;
  w->name = name;
  Py_XINCREF(name);
  w->vectorcall = zoned_vectorcall;
  w->dict = nullptr;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(w));
  PyObject* self = reinterpret_cast<PyObject*>(w);
  PyObject* functools = PyImport_ImportModule("functools");
  PyObject* done = functools ? PyObject_CallMethod(functools, "update_wrapper", "OO", self, func) : nullptr;
  Py_XDECREF(functools);
  if (!done) {
    Py_DECREF(self);
    return nullptr;
  }
  Py_DECREF(done);
  return self;
}

// ---- module functions ----

// zone(), zone("name"), zone(func): see the file comment.
PyObject* py_zone(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs == 0) return new_zone(caller_site(nullptr), nullptr);
  if (nargs == 1) {
    PyObject* a = args[0];
    if (PyUnicode_Check(a)) {
      const SourceLocation* loc = caller_site(a);
      if (!loc && PyErr_Occurred()) return nullptr;  // a name that is not valid text
      return new_zone(loc, a);
    }
    if (PyCallable_Check(a)) return decorate(a, nullptr);
  }
  PyErr_SetString(PyExc_TypeError, "ringprof.zone takes a name (str), a function to decorate, or nothing");
  return nullptr;
}

PyObject* py_instant(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "ringprof.instant takes a name (str)");
    return nullptr;
  }
  if (!is_recording()) Py_RETURN_NONE;
  name_thread_once();
  if (const SourceLocation* loc = caller_site(args[0])) {
    instant(loc);
  } else {
    if (PyErr_Occurred()) return nullptr;
    instant(utf8(args[0]));
  }
  Py_RETURN_NONE;
}

PyObject* py_counter(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "ringprof.counter takes a name (str) and a number");
    return nullptr;
  }
  const double value = PyFloat_AsDouble(args[1]);
  if (value == -1.0 && PyErr_Occurred()) return nullptr;
  if (!is_recording()) Py_RETURN_NONE;
  name_thread_once();
  const std::string_view text = utf8(args[0]);
  if (PyErr_Occurred()) return nullptr;
  if (const char* interned = intern_name(text))
    counter(interned, value);
  else
    counter(text, value);
  Py_RETURN_NONE;
}

// The ring keeps kMaxInlineName bytes of an argument's value: cut at a
// character boundary, so the text stays UTF-8 (continuation bytes are 10xxxxxx).
std::string_view inline_text(std::string_view value) {
  if (value.size() <= kMaxInlineName) return value;
  size_t n = kMaxInlineName;
  while (n > 0 && (static_cast<unsigned char>(value[n]) & 0xC0) == 0x80) --n;
  return value.substr(0, n);
}

// zone_arg(key, value): an argument of the innermost open zone. The key is
// interned (its pointer must outlive the rings); the value is str(value).
PyObject* py_zone_arg(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "ringprof.zone_arg takes a key (str) and a value");
    return nullptr;
  }
  if (!is_recording()) Py_RETURN_NONE;
  const std::string_view key = utf8(args[0]);
  if (PyErr_Occurred()) return nullptr;
  PyObject* text = args[1];
  if (PyUnicode_Check(text)) Py_INCREF(text);
  else text = PyObject_Str(text);
  if (!text) return nullptr;
  const std::string_view value = inline_text(utf8(text));
  if (!PyErr_Occurred()) {
    name_thread_once();
    // Past the name table's cap a new key has no static copy: the argument is left out.
    if (const char* interned = intern_name(key)) zone_arg(interned, value);
  }
  Py_DECREF(text);
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NONE;
}

// mark_collective(group="world"): marks the innermost open zone as a
// synchronous collective of `group`, a zone argument ringprof/recording.h
// describes (which calls qualify, and why the group is named). "" is "world",
// as in the C API.
PyObject* py_mark_collective(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* group = nargs > 0 ? args[0] : nullptr;
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  bool ok = nargs + keywords <= 1;
  if (ok && keywords == 1) {
    ok = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "group") == 0;
    group = args[nargs];
  }
  if (!ok || (group && !PyUnicode_Check(group))) {
    PyErr_SetString(PyExc_TypeError, "ringprof.mark_collective takes a group name (str), \"world\" when left out");
    return nullptr;
  }
  if (!is_recording()) Py_RETURN_NONE;
  const std::string_view name = group ? inline_text(utf8(group)) : std::string_view();
  if (PyErr_Occurred()) return nullptr;
  name_thread_once();
  if (name.empty())
    mark_collective();
  else
    mark_collective(name);
  Py_RETURN_NONE;
}

// Called after every step() and set_mode() from Python when set: a step can
// open or close a detailed window, and what follows the level (ringprof.torch's
// capture) should follow it from that very step, not a drain interval later.
PyObject* g_level_hook = nullptr;

PyObject* after_level_change(PyObject* result) {
  if (!result || !g_level_hook) return result;
  PyObject* r = PyObject_CallNoArgs(g_level_hook);
  if (!r) {
    Py_DECREF(result);
    return nullptr;
  }
  Py_DECREF(r);
  return result;
}

// step() numbers steps process-wide and returns the number; step(n) records n.
PyObject* py_step(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs == 0 || args[0] == Py_None) {
    name_thread_once();
    return after_level_change(PyLong_FromUnsignedLongLong(step()));
  }
  if (nargs == 1) {
    const unsigned long long n = PyLong_AsUnsignedLongLong(args[0]);
    if (n == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
    name_thread_once();
    step(static_cast<uint64_t>(n));
    return after_level_change(PyLong_FromUnsignedLongLong(n));
  }
  PyErr_SetString(PyExc_TypeError, "ringprof.step takes an optional step number");
  return nullptr;
}

PyObject* py_set_level_hook(PyObject*, PyObject* hook) {
  if (hook != Py_None && !PyCallable_Check(hook)) {
    PyErr_SetString(PyExc_TypeError, "the level hook must be callable or None");
    return nullptr;
  }
  PyObject* old = g_level_hook;
  g_level_hook = hook == Py_None ? nullptr : hook;
  Py_XINCREF(g_level_hook);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

PyObject* py_level_changed(PyObject*, PyObject*) {
  Py_INCREF(Py_None);
  return after_level_change(Py_None);
}

#define RINGPROF_FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

PyMethodDef record_functions[] = {
    {"zone", RINGPROF_FASTCALL(py_zone), METH_FASTCALL,
     "zone(name=None): a zone as a context manager or decorator; zone(func) decorates func."},
    {"instant", RINGPROF_FASTCALL(py_instant), METH_FASTCALL, "instant(name): a point in time on this thread."},
    {"counter", RINGPROF_FASTCALL(py_counter), METH_FASTCALL, "counter(name, value): a sample of a numeric track."},
    {"zone_arg", RINGPROF_FASTCALL(py_zone_arg), METH_FASTCALL,
     "zone_arg(key, value): an argument (str(value)) of this thread's innermost open zone."},
    {"mark_collective", RINGPROF_FASTCALL(py_mark_collective), METH_FASTCALL | METH_KEYWORDS,
     "mark_collective(group=\"world\"): marks this thread's innermost open zone as a synchronous collective of\n"
     "`group` (gloo, MPI, a barrier: its end coincides across the group's ranks; not an NCCL launch), which the\n"
     "tools use to line up the ranks' clocks and find stragglers."},
    {"step", RINGPROF_FASTCALL(py_step), METH_FASTCALL,
     "step(number=None): an iteration boundary; returns the step's number."},
    {"_set_level_hook", py_set_level_hook, METH_O, "Internal: called after step() and set_mode()."},
    {"_level_changed", py_level_changed, METH_NOARGS, "Internal: runs the level hook."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot zone_slots[] = {
    {Py_tp_doc, const_cast<char*>("A zone: `with` it, or decorate a function with it.")},
    {Py_tp_methods, zone_methods},
    {Py_tp_call, reinterpret_cast<void*>(zone_call)},
    {Py_tp_dealloc, reinterpret_cast<void*>(zone_dealloc)},
    {0, nullptr}};
PyType_Spec zone_spec = {"ringprof.Zone", sizeof(ZoneObject), 0, Py_TPFLAGS_DEFAULT, zone_slots};

PyMemberDef zoned_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(ZonedFunction, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(ZonedFunction, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot zoned_slots[] = {
    {Py_tp_doc, const_cast<char*>("A function whose every call is a ringprof zone.")},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(zoned_descr_get)},
    {Py_tp_traverse, reinterpret_cast<void*>(zoned_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(zoned_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(zoned_dealloc)},
    {Py_tp_getset, zoned_getset},
    {Py_tp_methods, zoned_methods},
    {Py_tp_members, zoned_members},
    {0, nullptr}};
PyType_Spec zoned_spec = {"ringprof.ZonedFunction", sizeof(ZonedFunction), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, zoned_slots};

}  // namespace

bool add_record_api(PyObject* module) {
  g_zone_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&zone_spec));
  g_zoned_function_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&zoned_spec));
  if (!g_zone_type || !g_zoned_function_type) return false;
  if (PyModule_AddObjectRef(module, "Zone", reinterpret_cast<PyObject*>(g_zone_type)) < 0) return false;
  if (PyModule_AddObjectRef(module, "ZonedFunction", reinterpret_cast<PyObject*>(g_zoned_function_type)) < 0)
    return false;
  return PyModule_AddFunctions(module, record_functions) == 0;
}

}  // namespace ringprof::python
